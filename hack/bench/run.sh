#!/usr/bin/env bash
# Runs Mooring's benchmarks with hack/opbench against envtest and prints one table.
#   hack/bench/run.sh bench        1000 and 100 CacheInstances, 2000 Apps, and 1000
#                                  CacheInstances with unrelated objects
#   hack/bench/run.sh cache        only the 1000 CacheInstances against the floor (~3 min)
#   hack/bench/run.sh apps         only the 2000 Apps against the floor (~2 min)
#   hack/bench/run.sh fleet        10,000 Apps over 10 namespaces, restart re-check, churn
#   hack/bench/run.sh sizes        Go heap per cached object per kind, before and after the
#                                  cache's transforms, and per portal User (hack/bench/cachesize)
# Environment: MOORING (operator binary; by default the checkout's, built as the image
# builds it: static, without symbols), OUT (results directory,
# default bin/bench), N_CACHE (1000), N_APPS (2000), N_FLEET (10000), IDLE (60s), PROFILE (seconds of CPU
# profile of kube-apiserver and the operator from the first create; off by default, as it
# costs CPU), LOG_LEVEL (the operator's, debug by default: see common), APPS_IDLE (the
# Apps' idle window, 20s), OPBENCH_ARGS (extra flags).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
suite=${1:-bench}
out=${OUT:-$root/bin/bench}
assets=${KUBEBUILDER_ASSETS:-$root/bin/k8s}
n_cache=${N_CACHE:-1000}
n_apps=${N_APPS:-2000}
n_fleet=${N_FLEET:-10000}
idle=${IDLE:-60s}
mkdir -p "$out"
go build -o "$root/bin/opbench" "$root/hack/opbench"
mooring=${MOORING:-}
if [ -z "$mooring" ]; then
  # As hack/image compiles it: what runs in a cluster is what is measured (no cgo, so no
  # libc mapped into the process; no symbol tables, which are never loaded anyway).
  mooring=$out/mooring
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$mooring" ./cmd/mooring)
fi
opbench=$root/bin/opbench

# A serving certificate for the webhook server. envtest has no webhook configurations
# and calls no webhook, so Mooring's own certificate rotation (which injects its CA into
# them) is left out: it fails without them and, after its retries, stops the manager.
certs=$out/webhook-certs
if [ ! -s "$certs/tls.crt" ]; then
  mkdir -p "$certs"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost -keyout "$certs/tls.key" -out "$certs/tls.crt" 2>/dev/null
fi

# The operator as a user would run it outside a cluster, with ports opbench picks.
common=(
  --assets "$assets" --crds "$root/config/crd/bases" --manager "$mooring"
  --manager-arg=--kubeconfig={{KUBECONFIG}}
  --manager-arg=--metrics-bind-address={{METRICS_ADDR}}
  --manager-arg=--health-probe-bind-address={{PROBE_ADDR}}
  --manager-arg=--webhook-port={{WEBHOOK_PORT}} --manager-arg=--webhook-host=127.0.0.1
  --manager-arg=--webhook-cert-management=external --manager-arg=--webhook-cert-dir="$certs"
  --manager-arg=--pprof-bind-address={{PPROF_ADDR}}
  # Debug level logs every write the engine makes with what differed (internal/engine,
  # writelog.go), so that a write in the idle window or after the restart names its cause
  # in the run's manager.log. LOG_LEVEL=info turns it off.
  --manager-arg=--zap-log-level="${LOG_LEVEL:-debug}"
  --gc-url 'http://{{PPROF_ADDR}}/debug/pprof/heap?gc=1' --pprof-url 'http://{{PPROF_ADDR}}/debug/pprof'
  --ready '{.status.observedGeneration}={.metadata.generation}'
  --quiet
)
cache=(
  --cr-template "$root/hack/bench/cacheinstance.yaml"
  --child 'apps/v1/Deployment={{.Name}}' --child 'v1/Service={{.Name}}'
  --child 'v1/ConfigMap={{.Name}}-binding'
)
app=(
  --cr-template "$root/hack/bench/app.yaml"
  --child 'v1/ConfigMap={{.Name}}-config' --child 'apps/v1/Deployment={{.Name}}'
  --child 'v1/Service={{.Name}}'
)

# The App path at a size that shows a regression in a few minutes: N_APPS Apps (port,
# config, 2 replicas) over 4 namespaces, a fair floor, a short idle and a restart check.
apps() {
  run apps-$n_apps --cr-template "$root/hack/bench/app-replicated.yaml" \
    --child 'v1/ConfigMap={{.Name}}-config' --child 'apps/v1/Deployment={{.Name}}' --child 'v1/Service={{.Name}}' \
    --n "$n_apps" --namespaces 4 --warmup "$n_apps" --floor-fresh --idle "${APPS_IDLE:-20s}" --restart-check
}

run() { # name, flags...
  local name=$1; shift
  echo "== $name" >&2
  rm -rf "$out/$name"
  # Exit status 3 (not converged) still writes the JSON the table reports.
  "$opbench" "${common[@]}" "$@" ${PROFILE:+--profile-seconds "$PROFILE"} ${OPBENCH_ARGS:-} --workdir "$out/$name" --out "$out/$name.json" >&2 || [ $? -eq 3 ]
  results+=("$out/$name.json")
}

results=()
case $suite in
bench)
  run cache-$n_cache "${cache[@]}" --n "$n_cache" --warmup "$n_cache" --floor-fresh \
    --idle "$idle" --restart-check
  run cache-$((n_cache / 10)) "${cache[@]}" --n $((n_cache / 10)) --warmup "$n_cache" --floor-fresh \
    --idle "$idle" --restart-check
  apps
  run cache-$n_cache-unrelated "${cache[@]}" --n "$n_cache" --warmup "$n_cache" --no-floor \
    --idle 20s --background-secrets 300 --background-secret-bytes 1048576 --background-configmaps 1000
  ;;
cache)
  run cache-$n_cache "${cache[@]}" --n "$n_cache" --warmup "$n_cache" --floor-fresh \
    --idle "$idle" --restart-check
  ;;
apps)
  apps
  ;;
fleet)
  run apps-$n_fleet "${app[@]}" --n "$n_fleet" --namespaces 10 --warmup 2000 --floor-fresh \
    --timeout 30m --idle 30s --restart-check --restart-signal KILL --restart-wait 5m \
    --churn-rate 20 --churn-duration 2m \
    --churn-patch '{"spec":{"config":"greeting=churn-{{.Index}}"}}' --churn-child 'v1/ConfigMap={{.Name}}-config'
  ;;
sizes)
  ;;
*)
  echo "usage: $0 bench|cache|apps|fleet|sizes" >&2
  exit 2
  ;;
esac
if [ ${#results[@]} -gt 0 ]; then
  "$opbench" table "${results[@]}" | tee "$out/$suite-table.txt"
fi
# Heap per cached object per kind (the table's heap B/obj is all kinds together, with the
# informers' and the engine's own records).
case $suite in
bench|sizes)
  echo "== cache sizes (N_SIZES, 100, of each: Apps, CacheInstances, portal Users)" >&2
  (cd "$root" && KUBEBUILDER_ASSETS="$assets" go run ./hack/bench/cachesize -n "${N_SIZES:-100}" -json "$out/cachesize.json") |
    tee "$out/cachesize-table.txt"
  ;;
esac
