#!/usr/bin/env bash
# Generates pkg/generated/openapi/zz_generated.openapi.go in the upstream tree the way upstream's
# build/root/Makefile.generated_files does (its KUBE target): openapi-gen over every package with a
# "+k8s:openapi-gen=" tag, code-generator and sample-apiserver excluded. kube-apiserver needs the
# file and the module zip lacks it; the result is committed as a build patch.
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/../build/lib.sh"

cd "${TREE_DIR}"
gen_dir=$(mktemp -d)
trap 'rm -rf "${gen_dir}"' EXIT
go build -trimpath -o "${gen_dir}/openapi-gen" k8s.io/kube-openapi/cmd/openapi-gen

# Package import paths: staging/src/<module>/... is <module>/..., the rest is k8s.io/kubernetes/...
packages=$(find . -path ./_output -prune -o -path ./vendor -prune -o -path './.*' -prune -o \
    -path ./staging/src/k8s.io/code-generator -prune -o -path ./staging/src/k8s.io/sample-apiserver -prune -o \
    -type f -name '*.go' -print0 |
  xargs -0 grep --color=never -l -Z '^// *+k8s:' | xargs -0 grep --color=never -l '+k8s:openapi-gen=' |
  xargs -n1 dirname | sed -e 's|^\./staging/src/||' -e 's|^\./|k8s.io/kubernetes/|' | LC_ALL=C sort -u | paste -sd, -)

"${gen_dir}/openapi-gen" --logtostderr \
  -i "${packages}" \
  -p k8s.io/kubernetes/pkg/generated/openapi \
  -O zz_generated.openapi \
  -o "${gen_dir}/out" \
  -h staging/src/k8s.io/code-generator/hack/boilerplate.go.txt \
  -r "${gen_dir}/violations.report"
cp "${gen_dir}/out/k8s.io/kubernetes/pkg/generated/openapi/zz_generated.openapi.go" pkg/generated/openapi/
# Upstream .gitignore hides generated files; stage it so hack/new-patch.sh commits it.
git add --force pkg/generated/openapi/zz_generated.openapi.go
if ! diff -q "${gen_dir}/violations.report" api/api-rules/violation_exceptions.list >/dev/null; then
  log "API rule violations differ from api/api-rules/violation_exceptions.list (upstream's known list):"
  diff "${gen_dir}/violations.report" api/api-rules/violation_exceptions.list | head -20 >&2 || true
fi
log "wrote ${TREE_DIR}/pkg/generated/openapi/zz_generated.openapi.go"
