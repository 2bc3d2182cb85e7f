#!/usr/bin/env bash
# Commits the changes in the upstream tree as a new patch at the end of the series and refreshes
# patches/. The message file holds the subject, the body and the provenance fields; start from
# hack/patch-message.template. A patch that ports upstream work keeps its upstream author:
# --author "Name <email>" (the pipeline stays the committer).
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/../build/lib.sh"

usage="usage: $0 [--author 'Name <email>'] MESSAGE_FILE   (start from hack/patch-message.template)"
author="${PIPELINE_AUTHOR}"
if [ $# -eq 3 ] && [ "$1" = --author ]; then
  author=$2
  shift 2
fi
[ $# -eq 1 ] || die "${usage}"
[[ "${author}" =~ ^[^\<\>]+\ \<[^\<\>@\ ]+@[^\<\>\ ]+\>$ ]] || die "--author '${author}' is not 'Name <email>'"
message=$1
[ -f "${message}" ] || die "no message file ${message}"
[ "$(tree_git rev-parse --abbrev-ref HEAD)" = patched ] || die "${TREE_DIR} is not on branch patched; run 'make patch' first"
[ -n "$(tree_git status --porcelain)" ] || die "nothing to commit in ${TREE_DIR}"

# Check the message as the patch file will carry it, before committing anything.
need_patchmeta
probe=$(mktemp -d)
trap 'rm -rf "${probe}"' EXIT
{ echo "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"; echo "From: ${author}"
  printf 'Subject: [PATCH] '; git stripspace --strip-comments < "${message}"; echo "---"; } > "${probe}/$(basename "${message}")"
problems=$(patch_header_problems "${probe}/$(basename "${message}")")
[ -z "${problems}" ] || die "$(printf 'message header incomplete:\n%s' "${problems}")"

tree_git add -A
# A binary in the change is a build output (go build without -o in the tree's root), not a fix.
binaries=$(tree_git diff --cached --numstat | awk '$1 == "-" && $2 == "-" {print $3}')
if [ -n "${binaries}" ]; then
  tree_git reset -q
  die "the change adds binary files, which no patch carries: ${binaries//$'\n'/ } (delete them from ${TREE_DIR}; build with 'go build -o /dev/null')"
fi
tree_git commit -q --cleanup=strip --author="${author}" -F "$(cd "$(dirname "${message}")" && pwd)/$(basename "${message}")"
"$(dirname "$0")/refresh-patches.sh"
log "your patch: ${PATCHES_DIR}/$(series_patches | tail -n 1) (its number is the NNNN of make prove PATCH=NNNN)"
