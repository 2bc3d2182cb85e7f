#!/usr/bin/env bash
# make conformance-build: upstream v1.17.3's conformance suite, built from the stock tree as its
# own hack/ scripts would: e2e.test (with test/e2e/generated/bindata.go, which the module zip does
# not carry), ginkgo (v1.10.1, the tree's go.mod), and the kubectl that 37 of the tests run. They
# land beside the stock components in _output/bin/stock/linux-<arch>/. Then it checks that
# e2e.test holds exactly the tree's [Conformance] tests (test/conformance/testdata/conformance.txt).
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

log "building e2e.test and ginkgo into ${out}"
(
  cd "${worktree}"
  # go test -c vets first, and today's vet stops 2019 code; upstream built it without.
  CGO_ENABLED=0 go test -c -trimpath -vet=off -ldflags="${ldflags}" -o "${out}/e2e.test" ./test/e2e
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -o "${out}/ginkgo" github.com/onsi/ginkgo/ginkgo
)

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
