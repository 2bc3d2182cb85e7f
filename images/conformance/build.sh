#!/usr/bin/env bash
# The test images of the conformance run (docs/conformance-plan.md, section 3), as docker-archives
# under the exact references v1.17.3's e2e framework asks for (`e2e.test --list-images`):
#   images/conformance/build.sh   -> _output/images/conformance/<name>_<tag>.docker.tar, images.txt
# Built here: the images upstream builds from the tree's own programs (make conformance-build
# compiles them), each as its Dockerfile under test/images says; etcd:3.4.3 is the stock etcd.
# busybox, httpd and nginx are stand-ins made of the base image's Debian busybox-static. Test
# fixtures only, never released. dnsutils, jessie-dnsutils and agnhost's base tools (Debian
# packages with their libraries) are the next step.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/../../build/lib.sh"

# ldconfig -r chroots into each image's root, and the pinned .debs unpack with their owners.
[ "$(id -u)" = 0 ] || die "images/conformance/build.sh runs as root (ldconfig -r chroots into each image's root filesystem)"
node_bin=$(bin_dir conformance)
stock_bin=$(bin_dir stock)
for program in "${node_bin}/agnhost" "${node_bin}/mounttest" "${node_bin}/test-webserver" "${node_bin}/nnp" \
  "${node_bin}/sample-apiserver" "${node_bin}/coredns" "${stock_bin}/etcd" "${stock_bin}/kube-proxy"; do
  [ -x "${program}" ] || die "missing ${program}: run 'make conformance-build'"
done
worktree=$(checkout_variant stock)
epoch=$(tree_git log -1 --format=%ct stock)
image_build=$(image_build_tool)
out="${OUTPUT_DIR}/images/conformance"
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
e2e=gcr.io/kubernetes-e2e-test-images

fixtures=()
# fixture REF ROOTFS JSON-FIELDS: one entry of the builder's list (image.Fixture).
fixture() { fixtures+=("{\"ref\": \"$1\", \"os\": \"linux\", \"arch\": \"amd64\", \"rootfs\": \"$2\"${3:+, $3}}"); }
# rootfs NAME: a fresh root filesystem directory for one image.
rootfs() { mkdir -p "${work}/$1"; echo "${work}/$1"; }

# mounttest: FROM scratch, COPY mounttest /, ENTRYPOINT ["/mounttest"]; mounttest-user adds USER 1001.
dir=$(rootfs mounttest)
install -m 0755 "${node_bin}/mounttest" "${dir}/mounttest"
fixture "${e2e}/mounttest:1.0" "${dir}" '"entrypoint": ["/mounttest"]'
fixture "${e2e}/mounttest-user:1.0" "${dir}" '"entrypoint": ["/mounttest"], "user": "1001"'

# test-webserver: FROM scratch, COPY test-webserver /, EXPOSE 80, ENTRYPOINT ["/test-webserver"];
# nautilus and kitten are it with their picture and data.json in its working directory (/).
for name in test-webserver nautilus kitten; do
  dir=$(rootfs "${name}")
  install -m 0755 "${node_bin}/test-webserver" "${dir}/test-webserver"
  if [ "${name}" != test-webserver ]; then
    install -m 0644 "${worktree}/test/images/${name}/html/data.json" "${worktree}/test/images/${name}/html/${name}.jpg" "${dir}/"
  fi
  fixture "${e2e}/${name}:1.0" "${dir}" '"entrypoint": ["/test-webserver"], "exposedPorts": ["80/tcp"]'
done

# nonewprivs: COPY nnp /usr/local/bin/nnp, RUN chmod +s, CMD ["nnp"] (the test runs it as uid 1000
# under no_new_privs and reads the effective uid it prints).
dir=$(rootfs nonewprivs)
install -D -m 4755 "${node_bin}/nnp" "${dir}/usr/local/bin/nnp"
fixture "${e2e}/nonewprivs:1.0" "${dir}" '"cmd": ["nnp"], "keepSpecialBits": true'

# sample-apiserver 1.10: ADD kube-sample-apiserver /, ENTRYPOINT ["/kube-sample-apiserver"]
# (staging/src/k8s.io/sample-apiserver/artifacts/simple-image); the tree's, serving wardle.k8s.io.
dir=$(rootfs sample-apiserver)
install -m 0755 "${node_bin}/sample-apiserver" "${dir}/kube-sample-apiserver"
install -d -m 1777 "${dir}/tmp"
fixture "${e2e}/sample-apiserver:1.10" "${dir}" '"entrypoint": ["/kube-sample-apiserver"]'

# etcd 3.4.3, the sample-apiserver's storage in the same test: the stock etcd at /usr/local/bin.
dir=$(rootfs etcd)
install -D -m 0755 "${stock_bin}/etcd" "${dir}/usr/local/bin/etcd"
install -d -m 1777 "${dir}/tmp" "${dir}/var/lib/etcd"
fixture "k8s.gcr.io/etcd:3.4.3" "${dir}"

# busybox 1.29 (44 tests), a stand-in: Debian's busybox-static 1.35 from the base image's root
# filesystem (images/base, pinned there), every applet linked in /bin as in Docker's library image,
# root and nobody, /tmp; CMD ["sh"]. The tests run its ash (`[[ ]]`, and the exact message
# "/bin/sh: can't create /file: Read-only file system"), sleep, cat, env, id, test, touch, echo,
# hexdump -C, ip (whose `link add` must fail, unprivileged), and wget --post-data: the same applets,
# two minor versions on.
base="${OUTPUT_DIR}/images/rootfs/amd64"
[ -x "${base}/bin/busybox" ] || ARCHS=amd64 "${REPO_ROOT}/images/base/rootfs.sh" amd64
dir=$(rootfs busybox)
cp -a "${base}/." "${dir}/"
for applet in $("${dir}/bin/busybox" --list); do
  [ -e "${dir}/bin/${applet}" ] || ln -s busybox "${dir}/bin/${applet}"
done
fixture "docker.io/library/busybox:1.29" "${dir}" '"cmd": ["sh"]'
busybox=${dir}

# serve NAME DOCROOT COMMAND: a stand-in web server on the busybox stand-in: busybox's httpd on :80
# serving DOCROOT, run by the script COMMAND, which (as PID 1 ignores an untrapped SIGTERM) stops
# it and exits on SIGTERM, as the servers it stands in for do.
serve() {
  local dir
  dir=$(rootfs "$1")
  cp -a "${busybox}/." "${dir}/"
  mkdir -p "${dir}$2" "$(dirname "${dir}$3")"
  printf '<html><body><h1>It works!</h1></body></html>\n' > "${dir}$2/index.html"
  cat > "${dir}$3" <<SCRIPT
#!/bin/sh
# Stand-in (images/conformance): busybox httpd on :80 serving $2, stopped on SIGTERM.
httpd -f -p 80 -h $2 &
server=\$!
trap 'kill \$server; exit 0' TERM INT
wait \$server
SCRIPT
  chmod 0755 "${dir}$3"
  echo "${dir}"
}
# httpd 2.4.38-alpine and 2.4.39-alpine (27 and 2 tests): StatefulSets probe GET /index.html on :80
# and break and mend that probe with `mv -v` of /usr/local/apache2/htdocs/index.html; the rest only
# need a server that runs and stops on SIGTERM. Two tags, two image IDs, as rolling updates need.
dir=$(serve httpd /usr/local/apache2/htdocs /usr/local/bin/httpd-foreground)
for version in 2.4.38 2.4.39; do
  fixture "docker.io/library/httpd:${version}-alpine" "${dir}" "\"cmd\": [\"httpd-foreground\"], \"workingDir\": \"/usr/local/apache2\", \"exposedPorts\": [\"80/tcp\"], \"env\": [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", \"HTTPD_VERSION=${version}\"]"
done
# nginx 1.14-alpine (12 tests): pods that run and stop; nothing reads what they serve.
dir=$(serve nginx /usr/share/nginx/html /usr/sbin/nginx)
fixture "docker.io/library/nginx:1.14-alpine" "${dir}" '"cmd": ["nginx", "-g", "daemon off;"], "exposedPorts": ["80/tcp"], "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "NGINX_VERSION=1.14"]'

# unpack LOCK DIR: every Debian package LOCK pins (hack/lock-debian-closure.sh), unpacked into DIR
# as dpkg would (no maintainer scripts run), then the busybox stand-in's applets where Debian put
# nothing of the same name, the users and /tmp, name lookups through files then DNS, and the
# dynamic linker's cache.
unpack() {
  local lock="${REPO_ROOT}/images/conformance/$1" dir=$2 package arch deb applet
  while read -r package arch _ _; do
    deb=$(fetch_deb "${lock}" "${package}" "${arch}")
    dpkg-deb -x "${deb}" "${dir}"
  done < <(grep -v '^#' "${lock}")
  install -D -m 0755 "${busybox}/bin/busybox" "${dir}/bin/busybox"
  for applet in $("${busybox}/bin/busybox" --list); do
    if [ ! -e "${dir}/bin/${applet}" ] && [ ! -e "${dir}/usr/bin/${applet}" ] &&
       [ ! -e "${dir}/sbin/${applet}" ] && [ ! -e "${dir}/usr/sbin/${applet}" ]; then
      ln -s busybox "${dir}/bin/${applet}"
    fi
  done
  install -m 0644 "${busybox}/etc/passwd" "${busybox}/etc/group" "${dir}/etc/"
  install -d -m 1777 "${dir}/tmp"
  printf 'hosts: files dns\n' > "${dir}/etc/nsswitch.conf"
  ldconfig -r "${dir}"
}

# dnsutils 1.1 and jessie-dnsutils 1.0 (7 tests each), stand-ins: Debian's dig and nslookup
# (bind9-dnsutils 9.18) and getent, with busybox's sh, seq, test, hostname, tr, awk and sleep. The
# DNS tests' probes run exactly those, `/usr/bin/dig +short` and `dig +notcp|+tcp +noall +answer
# +search` among them, and read what they write to /results.
dir=$(rootfs dnsutils)
unpack dnsutils.lock "${dir}"
fixture "${e2e}/dnsutils:1.1" "${dir}"
fixture "${e2e}/jessie-dnsutils:1.0" "${dir}"

# agnhost 2.8 (58 tests): the tree's agnhost as its Dockerfile lays it out (/agnhost, the link
# /agnhost-2, porter's localhost certificate, /uploads; ENTRYPOINT /agnhost, CMD pause), on Debian's
# versions of the tools it takes from Alpine (bash, curl, netcat-openbsd, nslookup, iproute2, iperf)
# instead of Alpine's; the tests run `curl`, `nc -zv -t -w 2`, `nc -w 1 -u` and nslookup in it.
dir=$(rootfs agnhost)
unpack agnhost.lock "${dir}"
ln -sfn nc.openbsd "${dir}/bin/nc"   # the alternative dpkg would set, over busybox's nc
# bash as sh: busybox's sh runs its own applets before PATH (nc, nslookup, ip), Alpine's does not.
ln -sfn bash "${dir}/bin/sh"
install -d "${dir}/usr/local/bin" "${dir}/uploads"
ln -s /usr/bin/iperf "${dir}/usr/local/bin/iperf"
install -m 0755 "${node_bin}/agnhost" "${dir}/agnhost"
ln -s agnhost "${dir}/agnhost-2"
install -m 0644 "${worktree}/test/images/agnhost/porter/localhost.crt" "${worktree}/test/images/agnhost/porter/localhost.key" "${dir}/"
fixture "${e2e}/agnhost:2.8" "${dir}" '"entrypoint": ["/agnhost"], "cmd": ["pause"], "exposedPorts": ["8080/tcp", "8081/tcp", "9376/tcp"]'

# The node's own add-ons, as kubeadm v1.17.3 deploys them (cmd/kubeadm/app/phases/addons):
# kube-proxy v1.17.3, the stock binary at /usr/local/bin as upstream's image has it, on Debian's
# iptables and conntrack, every iptables command the nf_tables one, as the host's (the kubelet runs
# the host's iptables in the node's namespace, and both must see the same tables);
dir=$(rootfs kube-proxy)
unpack kube-proxy.lock "${dir}"
for command in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -sfn "${command/tables/tables-nft}" "${dir}/usr/sbin/${command}"   # the alternatives dpkg would set
done
install -D -m 0755 "${stock_bin}/kube-proxy" "${dir}/usr/local/bin/kube-proxy"
fixture "k8s.gcr.io/kube-proxy:v1.17.3" "${dir}"
# CoreDNS 1.6.5 as its Dockerfile has it: /coredns, its entrypoint, and the CA bundle.
dir=$(rootfs coredns)
install -m 0755 "${node_bin}/coredns" "${dir}/coredns"
install -D -m 0644 "${base}/etc/ssl/certs/ca-certificates.crt" "${dir}/etc/ssl/certs/ca-certificates.crt"
fixture "k8s.gcr.io/coredns:1.6.5" "${dir}" '"entrypoint": ["/coredns"], "exposedPorts": ["53/tcp", "53/udp"]'

(IFS=,; printf '[%s]\n' "${fixtures[*]}") > "${work}/fixtures.json"
rm -rf "${out}"
mkdir -p "${out}"
"${image_build}" -fixtures "${work}/fixtures.json" -epoch "${epoch}" -out "${out}" > "${out}/images.txt"
log "$(wc -l < "${out}/images.txt") conformance test images in ${out} (images.txt: reference and image ID)"
