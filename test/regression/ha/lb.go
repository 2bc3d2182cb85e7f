package ha

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadBalancer is a TCP load balancer on loopback: what a VIP, LVS or HAProxy in front of the
// masters' apiservers is to the components. Each client gets a frontend of its own (a port), so a
// fault can hit one client's connections and spare the others. New connections go to the current
// backend. TLS passes through untouched: the components talk HTTP/2 to the apiservers' secure
// ports through it.
type loadBalancer struct {
	t        testing.TB
	backends []string

	mu        sync.Mutex
	current   int
	listeners []*frontendListener
	conns     map[*proxiedConn]struct{}
	closed    bool
	// isDown: the frontends are closed (down); a connection accepted just before is reset.
	isDown bool
	wg     sync.WaitGroup
}

// frontendListener is one client's frontend: its name, address and listener (nil while down).
type frontendListener struct {
	name, addr string
	l          net.Listener
}

// proxiedConn is one client connection and its connection to a backend.
type proxiedConn struct {
	frontend        string
	client, backend *net.TCPConn
	// blackholed: bytes are read from both sides and dropped, and both sockets stay open, so
	// neither end sees a FIN or an RST: what a moved VIP or a dead switch does to an established
	// connection. (Dropped bytes are acknowledged at the TCP level here, so a peer's kernel never
	// gives up on the connection by itself: only the application can notice.)
	blackholed atomic.Bool
	closeOnce  sync.Once
}

func newLoadBalancer(t testing.TB, backends ...string) *loadBalancer {
	lb := &loadBalancer{t: t, backends: backends, conns: map[*proxiedConn]struct{}{}}
	t.Cleanup(lb.close)
	return lb
}

// frontend opens a listener for one client and returns its address.
func (lb *loadBalancer) frontend(name string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		lb.t.Fatal(err)
	}
	f := &frontendListener{name: name, addr: l.Addr().String(), l: l}
	lb.mu.Lock()
	lb.listeners = append(lb.listeners, f)
	lb.mu.Unlock()
	lb.serve(f.name, l)
	return f.addr
}

func (lb *loadBalancer) serve(name string, l net.Listener) {
	lb.wg.Add(1)
	go func() {
		defer lb.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			lb.forward(name, c.(*net.TCPConn))
		}
	}()
}

// down closes every frontend, so that a client's connection is refused, then resets the
// established connections: what the clients of a stopped apiserver see.
func (lb *loadBalancer) down() {
	lb.mu.Lock()
	lb.isDown = true
	for _, f := range lb.listeners {
		if f.l != nil {
			f.l.Close()
			f.l = nil
		}
	}
	lb.mu.Unlock()
	lb.reset()
}

// up opens the frontends again, at their addresses.
func (lb *loadBalancer) up() {
	var failed []string
	lb.mu.Lock()
	lb.isDown = false
	for _, f := range lb.listeners {
		if f.l != nil {
			continue
		}
		l, err := net.Listen("tcp", f.addr)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s at %s: %v", f.name, f.addr, err))
			continue
		}
		f.l = l
		lb.serve(f.name, l)
	}
	lb.mu.Unlock()
	if len(failed) > 0 {
		lb.t.Fatalf("reopening frontends: %s", strings.Join(failed, "; "))
	}
}

// forward connects an accepted client to the current backend and pumps bytes both ways. A
// backend that cannot be reached resets the client, as an LB with no live backend does.
func (lb *loadBalancer) forward(frontend string, client *net.TCPConn) {
	lb.mu.Lock()
	backend := lb.backends[lb.current]
	lb.mu.Unlock()
	conn, err := net.DialTimeout("tcp", backend, 2*time.Second)
	if err != nil {
		_ = client.SetLinger(0)
		client.Close()
		return
	}
	pc := &proxiedConn{frontend: frontend, client: client, backend: conn.(*net.TCPConn)}
	lb.mu.Lock()
	if lb.closed || lb.isDown {
		lb.mu.Unlock()
		pc.close(true)
		return
	}
	lb.conns[pc] = struct{}{}
	lb.mu.Unlock()
	done := func() {
		pc.close(false)
		lb.mu.Lock()
		delete(lb.conns, pc)
		lb.mu.Unlock()
	}
	lb.wg.Add(2)
	go func() { defer lb.wg.Done(); pc.pump(pc.backend, pc.client); done() }()
	go func() { defer lb.wg.Done(); pc.pump(pc.client, pc.backend); done() }()
}

func (pc *proxiedConn) pump(dst, src *net.TCPConn) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 && !pc.blackholed.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// close ends both sides, with an RST if reset (SO_LINGER 0) or a FIN otherwise.
func (pc *proxiedConn) close(reset bool) {
	pc.closeOnce.Do(func() {
		if reset {
			_ = pc.client.SetLinger(0)
			_ = pc.backend.SetLinger(0)
		}
		pc.client.Close()
		pc.backend.Close()
	})
}

// route sends new connections to backend i from now on; established ones stay where they are.
func (lb *loadBalancer) route(i int) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.current = i
}

// connsOf returns the established connections of the named frontends (all if none is named).
func (lb *loadBalancer) connsOf(frontends ...string) []*proxiedConn {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var out []*proxiedConn
	for pc := range lb.conns {
		if len(frontends) == 0 || slices.Contains(frontends, pc.frontend) {
			out = append(out, pc)
		}
	}
	return out
}

// blackhole silences the established connections of the named frontends and returns how many.
func (lb *loadBalancer) blackhole(frontends ...string) int {
	conns := lb.connsOf(frontends...)
	for _, pc := range conns {
		pc.blackholed.Store(true)
	}
	return len(conns)
}

// reset ends the established connections of the named frontends with an RST both ways.
func (lb *loadBalancer) reset(frontends ...string) int {
	conns := lb.connsOf(frontends...)
	for _, pc := range conns {
		pc.close(true)
	}
	return len(conns)
}

func (lb *loadBalancer) close() {
	lb.mu.Lock()
	lb.closed = true
	for _, f := range lb.listeners {
		if f.l != nil {
			f.l.Close()
		}
	}
	lb.mu.Unlock()
	lb.reset()
	lb.wg.Wait()
}
