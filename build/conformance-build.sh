#!/usr/bin/env bash
# make conformance-build: upstream v1.17.3's conformance suite, built from the stock tree as its
# own hack/ scripts would: e2e.test (with test/e2e/generated/bindata.go, which the module zip does
# not carry), ginkgo (v1.10.1, the tree's go.mod), the kubectl that 37 of the tests run and
# kube-proxy, beside the stock components in _output/bin/stock/linux-<arch>/; and what a node's
# pods need besides, in _output/bin/conformance/linux-<arch>/: the test images' programs from the
# tree (agnhost 2.8, mounttest, test-webserver, nnp), and, from build/conformance.sum, the CNI
# plugins and CoreDNS 1.6.5. Then it checks that e2e.test holds exactly the tree's
# [Conformance] tests (test/conformance/testdata/conformance.txt).
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

"$(dirname "$0")/build.sh" stock kubectl kube-proxy
worktree=$(checkout_variant stock)
out=$(bin_dir stock "${HOST_ARCH}")
ldflags=$(version_ldflags stock "${worktree}")

log "generating test/e2e/generated/bindata.go (hack/generate-bindata.sh's arguments)"
(
  cd "${worktree}"
  go run github.com/go-bindata/go-bindata/go-bindata -nometadata -o test/e2e/generated/bindata.go -pkg generated \
    -ignore .jpg -ignore .png -ignore .md -ignore 'BUILD(\.bazel)?' \
    test/e2e/testing-manifests/... test/images/... test/fixtures/...
  gofmt -s -w test/e2e/generated/bindata.go
)

# The webhook, CRD conversion and aggregator tests serve TLS with a certificate e2e.test makes,
# naming the Service only in its Common Name. Go 1.15 and later never match a host against a
# Common Name, so today's kube-apiserver (ours and stock alike) refuses it: the name is added as
# a SAN, as upstream's e2e does since v1.19 (the Go 1.15 raise, kubernetes#93264). Through an
# overlay: the tree stays as it is.
e2e_overlay="${OUTPUT_DIR}/conformance/e2e-overlay"
rm -rf "${e2e_overlay}"
mkdir -p "${e2e_overlay}"
certs="${worktree}/test/e2e/apimachinery/certs.go"
sed '/^\t\t\tCommonName: serviceName + "." + namespaceName + ".svc",$/a\
\t\t\tAltNames:   cert.AltNames{DNSNames: []string{serviceName + "." + namespaceName + ".svc"}},' \
  "${certs}" > "${e2e_overlay}/certs.go"
[ "$(diff "${certs}" "${e2e_overlay}/certs.go" | grep -c '^>')" -eq 1 ] ||
  die "${certs}: expected one server certificate whose Common Name is the Service's name"
printf '{"Replace": {"%s": "%s"}}\n' "${certs}" "${e2e_overlay}/certs.go" > "${e2e_overlay}/overlay.json"

log "building e2e.test and ginkgo into ${out}"
(
  cd "${worktree}"
  # go test -c vets first, and today's vet stops 2019 code; upstream built it without.
  CGO_ENABLED=0 go test -c -trimpath -vet=off -overlay="${e2e_overlay}/overlay.json" -ldflags="${ldflags}" \
    -o "${out}/e2e.test" ./test/e2e
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -o "${out}/ginkgo" github.com/onsi/ginkgo/ginkgo
)

node_bin=$(bin_dir conformance "${HOST_ARCH}")
mkdir -p "${node_bin}"
log "building the test images' programs from the tree's test/images into ${node_bin}"
(
  cd "${worktree}"
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -o "${node_bin}/" \
    ./test/images/agnhost ./test/images/mounttest ./test/images/test-webserver
  # test/images/nonewprivs/Dockerfile copies its program as nnp.
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -o "${node_bin}/nnp" ./test/images/nonewprivs
)
version=$("${node_bin}/agnhost" --version)
[ "${version}" = "app version 2.8" ] || die "${node_bin}/agnhost says '${version}', not version 2.8, which v1.17.3's e2e framework asks for"

# The aggregator test deploys sample-apiserver:1.10 and asks it for wardle.k8s.io; the tree's
# sample-apiserver is the same program under the group wardle.example.com, which it took in 1.11.
# It is built with that one constant changed back, through an overlay: the tree stays as it is.
log "building the sample-apiserver stand-in (the tree's, serving wardle.k8s.io as 1.10's did)"
overlay="${OUTPUT_DIR}/conformance/sample-apiserver-overlay"
rm -rf "${overlay}"
entries=()
for file in pkg/apis/wardle/register.go pkg/apis/wardle/v1alpha1/register.go pkg/apis/wardle/v1beta1/register.go; do
  original="${worktree}/staging/src/k8s.io/sample-apiserver/${file}"
  changed="${overlay}/${file}"
  mkdir -p "$(dirname "${changed}")"
  sed 's/^const GroupName = "wardle.example.com"$/const GroupName = "wardle.k8s.io"/' "${original}" > "${changed}"
  [ "$(diff "${original}" "${changed}" | grep -c '^>')" -eq 1 ] ||
    die "${original}: expected one line 'const GroupName = \"wardle.example.com\"' to change"
  entries+=("\"${original}\": \"${changed}\"")
done
# It also answers its group's requests in JSON or YAML only, as the 1.10 image did: v1.17.3's test
# creates a flunder asking for protobuf first, which the tree's sample-apiserver refuses (406,
# Flunder has no protobuf encoding); upstream's test asks for JSON since it moved to that image.
original="${worktree}/staging/src/k8s.io/sample-apiserver/pkg/apiserver/apiserver.go"
changed="${overlay}/pkg/apiserver/apiserver.go"
mkdir -p "$(dirname "${changed}")"
sed '/^\tapiGroupInfo := genericapiserver.NewDefaultAPIGroupInfo(wardle.GroupName, Scheme, metav1.ParameterCodec, Codecs)$/a\
\tapiGroupInfo.NegotiatedSerializer = withoutProtobuf{Codecs}' "${original}" > "${changed}"
cat >> "${changed}" <<'EOT'

// withoutProtobuf offers the codecs' media types but protobuf (conformance stand-in for 1.10).
type withoutProtobuf struct{ serializer.CodecFactory }

func (w withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	var infos []runtime.SerializerInfo
	for _, info := range w.CodecFactory.SupportedMediaTypes() {
		if info.MediaType != runtime.ContentTypeProtobuf {
			infos = append(infos, info)
		}
	}
	return infos
}
EOT
[ "$(grep -c '^	apiGroupInfo.NegotiatedSerializer = withoutProtobuf{Codecs}$' "${changed}")" -eq 1 ] ||
  die "${original}: expected one NewDefaultAPIGroupInfo(wardle.GroupName, ...) to follow with the JSON-only serializer"
entries+=("\"${original}\": \"${changed}\"")
(IFS=,; printf '{"Replace": {%s}}\n' "${entries[*]}") > "${overlay}/overlay.json"
(
  cd "${worktree}"
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -overlay="${overlay}/overlay.json" -ldflags="${ldflags}" \
    -o "${node_bin}/sample-apiserver" k8s.io/sample-apiserver
)

log "fetching and verifying the out-of-tree sources (build/conformance.sum)"
src="${OUTPUT_DIR}/conformance/src"
rm -rf "${src}"
mkdir -p "${src}"
# Each pinned module through the module proxy, its zip's hash held to the pin, then copied out of
# the read-only module cache to be built.
while read -r module version sum; do
  info=$(go mod download -json "${module}@${version}")
  got=$(sed -n 's/^\t"Sum": "\(.*\)",$/\1/p' <<< "${info}")
  dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<< "${info}")
  [ "${got}" = "${sum}" ] || die "${module}@${version}: the module proxy's zip hashes to '${got}', build/conformance.sum pins ${sum}"
  mkdir -p "${src}/${module}"
  cp -R "${dir}/." "${src}/${module}/"
  chmod -R u+w "${src}/${module}"
done < <(grep -vE '^[[:space:]]*(#|$)' "${REPO_ROOT}/build/conformance.sum")
plugins="${src}/github.com/containernetworking/plugins"
coredns="${src}/github.com/coredns/coredns"

log "building the CNI plugins bridge, loopback, host-local and portmap (v0.8.5) into ${node_bin}"
(
  cd "${plugins}"
  rm -rf vendor   # the zip keeps vendor/modules.txt only; the module proxy has the rest
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -o "${node_bin}/" \
    ./plugins/main/bridge ./plugins/main/loopback ./plugins/ipam/host-local ./plugins/meta/portmap
)

log "building CoreDNS 1.6.5 into ${node_bin}, with json-iterator v1.1.12 and reflect2 v1.0.2"
(
  cd "${coredns}"
  # Its json-iterator v1.1.7 and reflect2 v1.0.1 crash on maps under Go 1.18 and later: the same
  # raise as patch 0002 gives the tree. go.sum takes the new hashes from the checksum database.
  go mod edit -require=github.com/json-iterator/go@v1.1.12 -require=github.com/modern-go/reflect2@v1.0.2
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -o "${node_bin}/coredns" .
)
version=$("${node_bin}/coredns" -version | sed -n 1p) # sed reads on: head would leave coredns a SIGPIPE
[ "${version}" = CoreDNS-1.6.5 ] || die "${node_bin}/coredns says it is ${version}, not CoreDNS-1.6.5"

log "checking that e2e.test holds the tree's [Conformance] tests"
# conformance.txt names each test by its innermost text without the [tags]; compare them so.
untagged() { sed -E -e 's/\[[^]]*\]//g' -e 's/ +/ /g' -e 's/^ //' -e 's/ $//'; }
listed=$(mktemp)
trap 'rm -f "${listed}"' EXIT
"${out}/e2e.test" --ginkgo.dryRun --ginkgo.v --ginkgo.noColor --ginkgo.focus='\[Conformance\]' |
  grep -E '\[Conformance\]\s*$' | untagged > "${listed}" || true
want=$(wc -l < "${worktree}/test/conformance/testdata/conformance.txt")
got=$(wc -l < "${listed}")
[ "${got}" -eq "${want}" ] || die "e2e.test lists ${got} [Conformance] tests, the tree's conformance.txt ${want}"
missing=()
while IFS= read -r name; do
  grep -qxF -- "${name}" "${listed}" || missing+=("${name}")
done < <(sed -E -e 's/^[^:]+: "(.*)"$/\1/' -e 's/\\\\\\"/"/g' "${worktree}/test/conformance/testdata/conformance.txt" | untagged)
[ ${#missing[@]} -eq 0 ] || die "$(printf 'e2e.test lacks conformance tests:\n%s' "$(printf '  %s\n' "${missing[@]}")")"
log "e2e.test holds the ${got} conformance tests of v1.17.3"

log "checking that the run's phases cover every conformance test but the excluded ones, once"
(cd "${REPO_ROOT}" && go test -count=1 -run '^TestPhasesCoverEveryConformanceTestOnce$' -v ./test/conformance/ | grep -E '^\s+phases_test|^(ok|FAIL|---)')
