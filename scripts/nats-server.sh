#!/usr/bin/env bash
# Locate (or fetch) a nats-server binary with version >= 2.10: by default
# the 2.10 line (Debian stable, trixie), with --line newest the newest line
# Debian carries (unstable, sid).
#
# Prints ONLY the absolute path of the binary on stdout; everything else goes
# to stderr, so callers can do:  NATS="$(scripts/nats-server.sh)"
#
# See --help for the lookup order.
set -euo pipefail

MIN_MAJOR=2
MIN_MINOR=10

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
PROJECT_ROOT="$(cd -- "${SCRIPT_DIR}/.." && pwd -P)"
# A checkout's own copy (older versions of this script fetched it there).
PROJECT_BIN="${PROJECT_ROOT}/.tools/nats-server/nats-server"
# Fetched copies live in the user's cache folder, never inside the project:
# an installed package sits in node_modules/, which the next `npm ci` wipes.
if [[ -n "${XDG_CACHE_HOME:-}" ]]; then
  TOOLS_DIR="${XDG_CACHE_HOME}/leasehold"
elif [[ -n "${HOME:-}" ]]; then
  TOOLS_DIR="${HOME}/.cache/leasehold"
else
  TOOLS_DIR="${PROJECT_ROOT}/.tools"
fi
LINE="${NATS_SERVER_LINE:-stable}"
DEBIAN_SUITE="trixie"
LOCK_FILE="${TOOLS_DIR}/.lock"
DEFAULT_MIRROR="http://deb.debian.org/debian"
KEYRING="/usr/share/keyrings/debian-archive-keyring.gpg"

log() { printf 'nats-server.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  cat <<EOF
Usage: scripts/nats-server.sh [--line stable|newest] [--help]

Prints the absolute path of a nats-server binary (version >= ${MIN_MAJOR}.${MIN_MINOR})
on stdout. All diagnostics go to stderr.

  --line stable   (default) any usable nats-server, else Debian trixie's (the 2.10 line)
  --line newest   the newest line Debian carries: only the cached copy in
                  \${XDG_CACHE_HOME:-~/.cache}/leasehold/nats-server-newest/, else
                  Debian unstable's (sid) package fetched there (steps 4 and 5 below);
                  NATS_SERVER_BIN and PATH are not consulted

Lookup order (--line stable):

  1. \$NATS_SERVER_BIN, if set and it is >= ${MIN_MAJOR}.${MIN_MINOR}
     (a set-but-unusable value is reported and then ignored).
  2. nats-server on PATH, if >= ${MIN_MAJOR}.${MIN_MINOR}.
  3. <project>/.tools/nats-server/nats-server, if >= ${MIN_MAJOR}.${MIN_MINOR}.
  4. The cached copy, \${XDG_CACHE_HOME:-~/.cache}/leasehold/nats-server/nats-server.
  5. Download Debian ${DEBIAN_SUITE}'s nats-server .deb with apt-get, using a
     private, throw-away apt state (the system apt configuration, lists and
     cache are not touched), extract its nats-server binary into the cache
     folder of 4. and print that path. Serialised with flock on
     \${XDG_CACHE_HOME:-~/.cache}/leasehold/.lock.

Environment:
  NATS_SERVER_LINE     the default of --line
  NATS_SERVER_BIN      explicit binary to use (see 1.)
  XDG_CACHE_HOME       where step 4 looks and step 5 fetches to (default ~/.cache)
  NATS_DEBIAN_MIRROR   Debian mirror for step 5 (default: the mirror the
                       system's apt sources use, then ${DEFAULT_MIRROR})

Exit status: 0 and a path on stdout on success, 1 otherwise.
EOF
}

while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --line) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; LINE="$2"; shift 2 ;;
    --line=*) LINE="${1#--line=}"; shift ;;
    *) usage >&2; exit 2 ;;
  esac
done
case "$LINE" in
  stable) DEBIAN_SUITE="trixie"; LOCAL_DIR="${TOOLS_DIR}/nats-server" ;;
  newest) DEBIAN_SUITE="sid"; LOCAL_DIR="${TOOLS_DIR}/nats-server-newest" ;;
  *) log "error: --line must be stable or newest, got '${LINE}'"; exit 2 ;;
esac
LOCAL_BIN="${LOCAL_DIR}/nats-server"

# Prints "MAJOR.MINOR.PATCH" for the given binary, or nothing on failure.
# `nats-server --version` prints e.g. "nats-server: v2.9.10".
nats_version() {
  local bin="$1" out
  [[ -f "$bin" && -x "$bin" ]] || return 0
  if command -v timeout >/dev/null 2>&1; then
    out="$(timeout 10 "$bin" --version 2>&1 || true)"
  else
    out="$("$bin" --version 2>&1 || true)"
  fi
  if [[ "$out" =~ v?([0-9]+)\.([0-9]+)(\.([0-9]+))? ]]; then
    printf '%s.%s.%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[4]:-0}"
  fi
}

# Succeeds if the binary runs and reports version >= MIN_MAJOR.MIN_MINOR.
is_usable() {
  local bin="$1" ver major minor
  ver="$(nats_version "$bin")"
  if [[ -z "$ver" ]]; then
    log "$bin: could not determine version"
    return 1
  fi
  IFS=. read -r major minor _ <<<"$ver"
  if (( major > MIN_MAJOR || (major == MIN_MAJOR && minor >= MIN_MINOR) )); then
    log "using $bin (v$ver)"
    return 0
  fi
  log "$bin is v$ver, need >= ${MIN_MAJOR}.${MIN_MINOR}"
  return 1
}

abs_path() {
  local p="$1"
  printf '%s/%s\n' "$(cd -- "$(dirname -- "$p")" && pwd -P)" "$(basename -- "$p")"
}

# 1. Explicit override.
if [[ "$LINE" == stable && -n "${NATS_SERVER_BIN:-}" ]]; then
  cand="$NATS_SERVER_BIN"
  if [[ "$cand" != */* ]]; then
    cand="$(command -v -- "$cand" || true)"
  fi
  if [[ -n "$cand" && -e "$cand" ]] && is_usable "$cand"; then
    abs_path "$cand"
    exit 0
  fi
  log "ignoring NATS_SERVER_BIN=$NATS_SERVER_BIN (missing or too old)"
fi

# 2. PATH.
if [[ "$LINE" == stable ]] && cand="$(command -v nats-server 2>/dev/null)" && [[ -n "$cand" ]]; then
  if is_usable "$cand"; then
    abs_path "$cand"
    exit 0
  fi
fi

# 3. Project-local copy.
if [[ "$LINE" == stable && -e "$PROJECT_BIN" ]] && is_usable "$PROJECT_BIN"; then
  printf '%s\n' "$PROJECT_BIN"
  exit 0
fi

# 4. Cached copy.
if [[ -e "$LOCAL_BIN" ]] && is_usable "$LOCAL_BIN"; then
  printf '%s\n' "$LOCAL_BIN"
  exit 0
fi

# 5. Fetch from Debian.
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
  log "no usable nats-server >= ${MIN_MAJOR}.${MIN_MINOR} found, and apt-get/dpkg-deb are not"
  log "available to fetch one automatically. Please install nats-server >= ${MIN_MAJOR}.${MIN_MINOR}"
  log "and put it on PATH (or set NATS_SERVER_BIN), e.g. from"
  log "  https://github.com/nats-io/nats-server/releases"
  log "or with Go:"
  log "  go install github.com/nats-io/nats-server/v2@latest   # installs into \$(go env GOPATH)/bin"
  exit 1
fi
command -v flock >/dev/null 2>&1 || die "flock (util-linux) is required to fetch nats-server"

mkdir -p "$TOOLS_DIR"
exec 9>"$LOCK_FILE"
if ! flock -n 9; then
  log "waiting for another invocation holding $LOCK_FILE ..."
  flock -w 900 9 || die "timed out waiting for $LOCK_FILE"
fi

# Another invocation may have finished the download while we waited.
if [[ -e "$LOCAL_BIN" ]] && is_usable "$LOCAL_BIN"; then
  printf '%s\n' "$LOCAL_BIN"
  exit 0
fi

# Debian mirrors (".../debian", not debian-security/ports) the system's apt
# sources already use, so we reach Debian the same way the machine does.
system_mirrors() {
  local f
  {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [[ -r "$f" ]] || continue
      # one-line format: deb [opts] URI suite components...
      sed -nE 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -r "$f" ]] || continue
      # deb822 format: "URIs: a b c"
      sed -nE 's/^URIs:[[:space:]]*(.*)$/\1/Ip' "$f" | tr ' \t' '\n\n'
    done
  } 2>/dev/null | sed -E 's#/+$##' | grep -E '^https?://[^[:space:]]+/debian$' || true
}

mirrors=()
add_mirror() {
  local m="${1%/}" x
  [[ -n "$m" ]] || return 0
  for x in "${mirrors[@]+"${mirrors[@]}"}"; do [[ "$x" == "$m" ]] && return 0; done
  mirrors+=("$m")
}
if [[ -n "${NATS_DEBIAN_MIRROR:-}" ]]; then
  add_mirror "$NATS_DEBIAN_MIRROR"
else
  while IFS= read -r m; do add_mirror "$m"; done < <(system_mirrors)
  add_mirror "$DEFAULT_MIRROR"
fi

tmp_bin=""
WORK="$(mktemp -d "${TMPDIR:-/tmp}/nats-server-fetch.XXXXXX")"
cleanup() {
  rm -rf -- "$WORK"
  [[ -z "$tmp_bin" ]] || rm -f -- "$tmp_bin"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Private apt tree. APT_CONFIG points at our own config file which redirects
# every directory apt would read or write (sources, lists, cache, status,
# preferences and the apt.conf.d parts dir) into $WORK, so neither /etc/apt
# nor /var/lib/apt nor /var/cache/apt is read-for-config or modified, and no
# system Post-Invoke hooks (packagekit, appstream, ...) run.
mkdir -p "$WORK"/{etc/apt.conf.d,etc/preferences.d,etc/sources.list.d,etc/trusted.gpg.d,lists/partial,cache/archives/partial,log,deb,root}
: >"$WORK/status"
# apt drops privileges to _apt for downloads when run as root; let it reach
# (only) our private work tree.
chmod 755 "$WORK"
if [[ "$(id -u)" == 0 ]] && id _apt >/dev/null 2>&1; then
  chown -R _apt "$WORK/lists" "$WORK/cache" "$WORK/deb" 2>/dev/null || true
fi

if [[ -r "$KEYRING" ]]; then
  # bookworm's debian-archive-keyring (2023.3+deb12u1 and later) already
  # ships the trixie (13) archive keys, so trixie's InRelease verifies.
  signed_by="signed-by=${KEYRING}"
else
  # Last resort: no Debian archive keyring on this machine, so the Release
  # signature cannot be verified. We skip verification (trusted=yes);
  # the .deb is still checked against the (unverified) Packages hashes.
  log "WARNING: $KEYRING not found; fetching WITHOUT signature verification (trusted=yes)"
  signed_by="trusted=yes"
fi

# Carry over the few system apt settings that govern *how* this machine
# reaches the archive (proxy, date checks); apt-config only reads.
sys_acquire=""
if command -v apt-config >/dev/null 2>&1; then
  for key in Acquire::http::Proxy Acquire::https::Proxy Acquire::Check-Valid-Until Acquire::Check-Date; do
    val="$(apt-config dump "$key" 2>/dev/null \
      | awk -v k="$key" 'tolower($1) == tolower(k) { v = $2; sub(/;$/, "", v); gsub(/"/, "", v); print v; exit }')"
    if [[ -n "$val" ]]; then
      sys_acquire+="${key} \"${val}\";"$'\n'
    fi
  done
fi

arch="$(dpkg --print-architecture 2>/dev/null || true)"
arch_opt=""
[[ -n "$arch" ]] && arch_opt=" arch=${arch}"

cat >"$WORK/apt.conf" <<EOF
Dir::Etc "$WORK/etc";
Dir::Etc::Main "/dev/null";
Dir::Etc::Parts "$WORK/etc/apt.conf.d";
Dir::Etc::SourceList "$WORK/etc/sources.list";
Dir::Etc::SourceParts "$WORK/etc/sources.list.d";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "$WORK/etc/preferences.d";
Dir::Etc::Trusted "$WORK/etc/trusted.gpg";
Dir::Etc::TrustedParts "$WORK/etc/trusted.gpg.d";
Dir::State "$WORK";
Dir::State::Lists "$WORK/lists";
Dir::State::Status "$WORK/status";
Dir::State::extended_states "$WORK/extended_states";
Dir::Cache "$WORK/cache";
Dir::Cache::Archives "$WORK/cache/archives";
Dir::Log "$WORK/log";
Acquire::Languages "none";
Acquire::GzipIndexes "true";
Acquire::Retries "2";
APT::Get::List-Cleanup "false";
${sys_acquire}
EOF

apt_get() {
  # Never prompt; keep apt's output on stderr.
  APT_CONFIG="$WORK/apt.conf" DEBIAN_FRONTEND=noninteractive apt-get -q "$@" </dev/null >&2
}

deb=""
for mirror in "${mirrors[@]}"; do
  log "fetching nats-server from Debian ${DEBIAN_SUITE} via ${mirror} ..."
  rm -rf "$WORK/lists" && mkdir -p "$WORK/lists/partial"
  [[ "$(id -u)" == 0 ]] && id _apt >/dev/null 2>&1 && chown -R _apt "$WORK/lists" 2>/dev/null || true
  printf 'deb [%s%s] %s %s main\n' "$signed_by" "$arch_opt" "$mirror" "$DEBIAN_SUITE" \
    >"$WORK/etc/sources.list"
  # apt-get update only warns (exit 0) on some fetch failures; require the
  # index to actually contain the package.
  if ! apt_get update; then
    log "apt-get update against ${mirror} failed"
    continue
  fi
  if ! (cd "$WORK/deb" && apt_get download nats-server); then
    log "apt-get download from ${mirror} failed"
    continue
  fi
  deb="$(find "$WORK/deb" -maxdepth 1 -name 'nats-server_*.deb' -print -quit)"
  [[ -n "$deb" ]] && break
done
[[ -n "$deb" ]] || die "could not download nats-server from Debian ${DEBIAN_SUITE} (tried: ${mirrors[*]})"
log "downloaded $(basename -- "$deb")"

dpkg-deb -x "$deb" "$WORK/root"
# trixie ships it as usr/sbin/nats-server (bookworm: usr/bin); accept either.
extracted=""
for p in usr/bin/nats-server usr/sbin/nats-server; do
  if [[ -f "$WORK/root/$p" ]]; then extracted="$WORK/root/$p"; break; fi
done
[[ -n "$extracted" ]] || die "$(basename -- "$deb") contains no usr/bin/nats-server or usr/sbin/nats-server"

mkdir -p "$LOCAL_DIR"
tmp_bin="${LOCAL_BIN}.tmp.$$"
cp -- "$extracted" "$tmp_bin"
chmod 755 "$tmp_bin"
if ! is_usable "$tmp_bin"; then
  rm -f -- "$tmp_bin"
  die "downloaded nats-server is not usable (see above)"
fi
mv -f -- "$tmp_bin" "$LOCAL_BIN"   # atomic replace
log "installed $LOCAL_BIN"
printf '%s\n' "$LOCAL_BIN"
