#!/usr/bin/env bash
# Validates monitoring/: the alerting rules (promtool check rules), their unit tests against
# incident-shaped series (promtool test rules), and that every query of the Grafana dashboard is
# valid PromQL (checked by promtool as recording rules).
set -o errexit -o nounset -o pipefail
. "$(dirname "$0")/lib.sh"

need_tools promtool
cd "${REPO_ROOT}/monitoring"
promtool check rules prometheus/rules.yaml
promtool test rules prometheus/rules_test.yaml

scratch=$(mktemp -d)
trap 'rm -rf "${scratch}"' EXIT
python3 - grafana/kube-controller-manager.json > "${scratch}/dashboard-queries.yaml" <<'PY'
import json, sys
dashboard = json.load(open(sys.argv[1]))
print("groups:\n  - name: dashboard-queries\n    rules:")
for panel in dashboard["panels"]:
    for target in panel["targets"]:
        print("      - record: dashboard:panel_%d_%s" % (panel["id"], target["refId"]))
        print("        expr: %s" % json.dumps(target["expr"]))
PY
promtool check rules "${scratch}/dashboard-queries.yaml"
log "monitoring: rules, rule tests and dashboard queries are valid"
