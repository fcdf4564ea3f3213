#!/usr/bin/env bash
# Real services for the tests: a Docker engine (started by hand, no systemd, no bridge, no
# iptables) with a tiny busybox image built locally and an OpenSSH server on 127.0.0.1 with
# key-only login for a throwaway user (the docker and ssh execution environments), and a
# throwaway PostgreSQL cluster (the PostgreSQL session store): made with initdb in
# $HERMES_SERVICES_DIR/postgres, run by an unprivileged system user (hermespg; root cannot run
# postgres), listening on 127.0.0.1 and a Unix socket in that folder only. `start` also installs
# Debian's chromium, which the browser toolset's tests drive.
#
#   bash .ci/services.sh start [SERVICE...]  install what is missing (apt), start the services
#                                            (docker, ssh, postgres; all by default), print
#                                            `export` lines
#   bash .ci/services.sh stop [SERVICE...]   stop them by pid; leaves no dockerd, containerd,
#                                            sshd or postgres behind
#   bash .ci/services.sh status              say what runs
#
# Every mode is idempotent. The variables the tests read are also written to
# $HERMES_SERVICES_DIR/env (default /tmp/hermes-services/env), which the test fixtures read when
# the variables are not in their environment, so `pytest` works after a plain `start`.
set -euo pipefail

DIR=${HERMES_SERVICES_DIR:-/tmp/hermes-services}
DOCKER_DIR=$DIR/docker
SSH_DIR=$DIR/sshd
ENV_FILE=$DIR/env
IMAGE=${HERMES_TEST_DOCKER_IMAGE:-local/busybox:latest}
SSH_USER_=${HERMES_TEST_SSH_USER:-hermestest}
SSH_PORT_=${HERMES_TEST_SSH_PORT:-2222}
PG_DIR=$DIR/postgres
PG_OS_USER=${HERMES_TEST_POSTGRES_OS_USER:-hermespg}
PG_PORT_=${HERMES_TEST_POSTGRES_PORT:-5433}
PG_VERSION_=15
ALL_SERVICES=(docker ssh postgres)
SERVICES=()

log() { echo "services: $*" >&2; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { [ -f "$1" ] && tr -dc '0-9' <"$1" || true; }

# wants NAME: whether NAME is among the services this run starts or stops
wants() {
  local s
  for s in "${SERVICES[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

install_missing() {
  local pkgs=()
  if wants docker; then
    command -v dockerd >/dev/null || pkgs+=(docker.io)
    [ -x /bin/busybox ] || pkgs+=(busybox-static)
  fi
  if wants ssh; then
    [ -x /usr/sbin/sshd ] || pkgs+=(openssh-server)
    command -v ssh-keygen >/dev/null || pkgs+=(openssh-client)
  fi
  # PostgreSQL 15 and its contrib modules (pg_trgm), which Debian ships in postgresql-15
  if wants postgres; then
    [ -x "/usr/lib/postgresql/$PG_VERSION_/bin/initdb" ] || pkgs+=("postgresql-$PG_VERSION_")
    [ -f "/usr/share/postgresql/$PG_VERSION_/extension/pg_trgm.control" ] ||
      pkgs+=(postgresql-contrib)
  fi
  # the interactive chat's screen tests run hermes in tmux and read the screen
  command -v tmux >/dev/null || pkgs+=(tmux)
  # the browser toolset's tests drive Debian's Chromium (launched by path, nothing downloaded)
  [ -x /usr/bin/chromium ] || pkgs+=(chromium)
  [ ${#pkgs[@]} -eq 0 ] && return 0
  log "installing ${pkgs[*]} with apt-get"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
}

docker_up() { DOCKER_HOST="unix://$DOCKER_DIR/docker.sock" docker info >/dev/null 2>&1; }

start_dockerd() {
  local pid driver
  pid=$(pid_of "$DOCKER_DIR/dockerd.pid")
  if alive "$pid" && docker_up; then
    log "dockerd already running (pid $pid)"
    return 0
  fi
  for driver in overlay2 vfs; do
    mkdir -p "$DOCKER_DIR"
    umount "$DOCKER_DIR/exec/netns/default" 2>/dev/null || true
    rm -f "$DOCKER_DIR/dockerd.pid" "$DOCKER_DIR/docker.sock"
    dockerd \
      --data-root "$DOCKER_DIR/root-$driver" --exec-root "$DOCKER_DIR/exec" \
      --pidfile "$DOCKER_DIR/dockerd.pid" -H "unix://$DOCKER_DIR/docker.sock" \
      --iptables=false --ip6tables=false --bridge=none --storage-driver "$driver" \
      >"$DOCKER_DIR/dockerd.log" 2>&1 </dev/null &
    pid=$!
    for _ in $(seq 1 120); do
      alive "$pid" || break
      if docker_up; then
        log "dockerd started (pid $pid, storage driver $driver)"
        return 0
      fi
      sleep 0.25
    done
    log "dockerd with storage driver $driver did not come up:"
    tail -5 "$DOCKER_DIR/dockerd.log" >&2 || true
    stop_pid "$pid" dockerd 30
  done
  return 1
}

build_image() {
  export DOCKER_HOST="unix://$DOCKER_DIR/docker.sock"
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    return 0
  fi
  local root
  root=$(mktemp -d /tmp/hermes-bbroot.XXXXXX)
  mkdir -p "$root/bin" "$root/tmp" "$root/root" "$root/etc" "$root/workspace" "$root/home/user"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n' \
    >"$root/etc/passwd"
  printf 'root:x:0:\nuser:x:1000:\n' >"$root/etc/group"
  chmod 1777 "$root/tmp" "$root/workspace"
  chown 1000:1000 "$root/home/user"
  tar -C "$root" -c . | docker import -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/bin' \
    -c 'WORKDIR /workspace' - "$IMAGE" >/dev/null
  rm -rf "$root"
  log "built image $IMAGE"
}

start_sshd() {
  local pid
  mkdir -p "$SSH_DIR"
  chmod 755 "$DIR" "$SSH_DIR"
  if ! id "$SSH_USER_" >/dev/null 2>&1; then
    useradd -m -s /bin/bash "$SSH_USER_"
    usermod -p '*' "$SSH_USER_"   # no password, but not locked: key login works
    log "created user $SSH_USER_"
  fi
  (
    cd "$SSH_DIR"
    [ -f hostkey ] || ssh-keygen -q -t ed25519 -N '' -C hermes-test-host -f hostkey
    [ -f clientkey ] || ssh-keygen -q -t ed25519 -N '' -C hermes-test-client -f clientkey
    # a key the server does not accept, for the "bad key" tests
    [ -f otherkey ] || ssh-keygen -q -t ed25519 -N '' -C hermes-test-other -f otherkey
    cp clientkey.pub authorized_keys
    chmod 644 authorized_keys
  )
  pid=$(pid_of "$SSH_DIR/sshd.pid")
  if alive "$pid"; then
    log "sshd already running (pid $pid)"
  else
    if ! python3 - "$SSH_PORT_" <<'PY' 2>/dev/null; then
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()
PY
      SSH_PORT_=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
      log "port ${HERMES_TEST_SSH_PORT:-2222} is taken; sshd uses $SSH_PORT_"
    fi
    mkdir -p -m 0755 /run/sshd
    cat >"$SSH_DIR/sshd_config" <<CFG
Port $SSH_PORT_
ListenAddress 127.0.0.1
HostKey $SSH_DIR/hostkey
PidFile $SSH_DIR/sshd.pid
AuthorizedKeysFile $SSH_DIR/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxSessions 64
MaxStartups 64:30:128
CFG
    /usr/sbin/sshd -t -f "$SSH_DIR/sshd_config"
    # -D: stay in the foreground so a failed bind shows; -e: log to stderr
    /usr/sbin/sshd -D -e -f "$SSH_DIR/sshd_config" >"$SSH_DIR/sshd.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$SSH_DIR/sshd.pid"
    for _ in $(seq 1 50); do
      alive "$pid" || { log "sshd exited:"; cat "$SSH_DIR/sshd.log" >&2; return 1; }
      grep -q "Server listening" "$SSH_DIR/sshd.log" && break
      sleep 0.1
    done
    echo "$SSH_PORT_" >"$SSH_DIR/port"
    log "sshd started (pid $pid, 127.0.0.1:$SSH_PORT_)"
  fi
  SSH_PORT_=$(cat "$SSH_DIR/port")
  echo "[127.0.0.1]:$SSH_PORT_ $(cut -d' ' -f1,2 "$SSH_DIR/hostkey.pub")" >"$SSH_DIR/known_hosts"
  ssh -p "$SSH_PORT_" -i "$SSH_DIR/clientkey" -o UserKnownHostsFile="$SSH_DIR/known_hosts" \
    -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes \
    "$SSH_USER_@127.0.0.1" true </dev/null
}

# the variables of every service that was started (by this run or an earlier one)
write_env() {
  local tmp=$ENV_FILE.tmp
  {
    if [ -f "$DOCKER_DIR/dockerd.pid" ]; then
      echo "export DOCKER_HOST=unix://$DOCKER_DIR/docker.sock"
      echo "export HERMES_TEST_DOCKER_HOST=unix://$DOCKER_DIR/docker.sock"
      echo "export HERMES_TEST_DOCKER_IMAGE=$IMAGE"
    fi
    if [ -f "$SSH_DIR/port" ]; then
      echo "export HERMES_TEST_SSH_HOST=127.0.0.1"
      echo "export HERMES_TEST_SSH_PORT=$(cat "$SSH_DIR/port")"
      echo "export HERMES_TEST_SSH_USER=$SSH_USER_"
      echo "export HERMES_TEST_SSH_KEY=$SSH_DIR/clientkey"
      echo "export HERMES_TEST_SSH_OTHER_KEY=$SSH_DIR/otherkey"
      echo "export HERMES_TEST_SSH_KNOWN_HOSTS=$SSH_DIR/known_hosts"
    fi
    if [ -f "$PG_DIR/url" ]; then
      echo "export HERMES_TEST_POSTGRES_URL=$(cat "$PG_DIR/url")"
    fi
  } >"$tmp"
  chmod 600 "$tmp"
  mv "$tmp" "$ENV_FILE"
  cat "$ENV_FILE"
}

# stop_pid PID NAME SECONDS [SIGNAL]: SIGNAL (default TERM), wait, then KILL.
stop_pid() {
  local pid=$1 name=$2 wait_s=$3 signal=${4:-TERM}
  alive "$pid" || return 0
  kill -"$signal" "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((wait_s * 10))); do
    alive "$pid" || { log "stopped $name (pid $pid)"; return 0; }
    sleep 0.1
  done
  log "$name (pid $pid) ignored $signal for ${wait_s}s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
  sleep 0.2
}

# the pids of the process tree under $1 (children first), read from /proc
descendants() {
  local child
  for child in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    descendants "$child"
    echo "$child"
  done
}

stop_ssh() {
  local pid cpid kids
  pid=$(pid_of "$SSH_DIR/sshd.pid")
  if alive "$pid"; then
    # the listener's per-connection children (open sessions) outlive it: stop them too
    kids=$(descendants "$pid")
    stop_pid "$pid" sshd 10
    for cpid in $kids; do kill -TERM "$cpid" 2>/dev/null || true; done
    sleep 0.2
    for cpid in $kids; do kill -KILL "$cpid" 2>/dev/null || true; done
  fi
  rm -f "$SSH_DIR/sshd.pid"
}

stop_docker() {
  local pid cpid f
  pid=$(pid_of "$DOCKER_DIR/dockerd.pid")
  cpid=$(pid_of "$DOCKER_DIR/exec/containerd/containerd.pid")
  [ -n "$cpid" ] || cpid=$(pid_of "$DOCKER_DIR/root-overlay2/containerd/daemon/containerd.pid")
  if alive "$pid"; then
    # dockerd stops its containers and the containerd it started before it exits
    stop_pid "$pid" dockerd 40
  fi
  # a containerd left behind by a dockerd that was killed
  for f in "$DOCKER_DIR"/exec/containerd/containerd.pid "$DOCKER_DIR"/root-*/containerd/daemon/containerd.pid; do
    cpid=$(pid_of "$f")
    alive "$cpid" && stop_pid "$cpid" containerd 10
  done
  umount "$DOCKER_DIR/exec/netns/default" 2>/dev/null || true
  rm -f "$DOCKER_DIR/dockerd.pid"
}

# --- PostgreSQL: a throwaway cluster for the PostgreSQL session store's tests ---------------

pg_bin() { echo "/usr/lib/postgresql/$PG_VERSION_/bin"; }
as_pg() { runuser -u "$PG_OS_USER" -- "$@"; }
pg_pid() { [ -f "$PG_DIR/data/postmaster.pid" ] && head -1 "$PG_DIR/data/postmaster.pid" | tr -dc '0-9' || true; }
port_free() {
  python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()
PY
}

# pg_url PORT: check that the test role logs in over TCP with its password, then write the URL
pg_url() {
  PGPASSWORD=$(cat "$PG_DIR/password") "$(pg_bin)/psql" -h 127.0.0.1 -p "$1" -U hermes \
    -d postgres -Atqc 'SELECT 1' >/dev/null </dev/null
  (umask 077; echo "postgresql://hermes:$(cat "$PG_DIR/password")@127.0.0.1:$1/postgres" \
    >"$PG_DIR/url")
}

start_postgres() {
  local bin pid port
  bin=$(pg_bin)
  [ -x "$bin/initdb" ] || { log "no PostgreSQL $PG_VERSION_ in $bin"; return 1; }
  if ! id "$PG_OS_USER" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$PG_OS_USER"
    log "created system user $PG_OS_USER"
  fi
  chmod 755 "$DIR"
  mkdir -p "$PG_DIR"
  chown "$PG_OS_USER:" "$PG_DIR"
  chmod 700 "$PG_DIR"
  pid=$(pg_pid)
  if alive "$pid"; then
    port=$(sed -n "s/^port = //p" "$PG_DIR/data/hermes-test.conf")
    pg_url "$port"
    log "postgres already running (pid $pid, 127.0.0.1:$port)"
    return 0
  fi
  if [ ! -f "$PG_DIR/data/PG_VERSION" ]; then
    rm -rf "$PG_DIR/data"
    # the password of the test role: the tests connect over TCP with it (scram-sha-256), and
    # check that no error message shows it
    (umask 077; head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$PG_DIR/password")
    chown "$PG_OS_USER:" "$PG_DIR/password"
    as_pg "$bin/initdb" -D "$PG_DIR/data" --username=hermes --pwfile="$PG_DIR/password" \
      --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 \
      >"$PG_DIR/initdb.log" 2>&1 </dev/null || { cat "$PG_DIR/initdb.log" >&2; return 1; }
    echo "include_if_exists = 'hermes-test.conf'" >>"$PG_DIR/data/postgresql.conf"
    log "made a PostgreSQL $PG_VERSION_ cluster in $PG_DIR/data"
  fi
  port=$PG_PORT_
  if ! port_free "$port"; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    log "port $PG_PORT_ is taken; postgres uses $port"
  fi
  # loopback and the folder's socket only; durability is not wanted from a throwaway cluster
  cat >"$PG_DIR/data/hermes-test.conf" <<CFG
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$PG_DIR'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
CFG
  chown "$PG_OS_USER:" "$PG_DIR/data/hermes-test.conf"
  if ! as_pg "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w -t 60 start \
    >"$PG_DIR/pg_ctl.log" 2>&1 </dev/null; then
    log "postgres did not start:"
    tail -5 "$PG_DIR/postgres.log" >&2 || true
    return 1
  fi
  pg_url "$port"
  log "postgres started (pid $(pg_pid), 127.0.0.1:$port and a socket in $PG_DIR)"
}

stop_postgres() {
  local pid
  pid=$(pg_pid)
  # SIGINT: the fast shutdown (open connections are closed, not waited for)
  if alive "$pid"; then stop_pid "$pid" postgres 30 INT; fi
  rm -f "$PG_DIR/url"
}

stop_all() {
  if wants ssh; then stop_ssh; fi
  if wants docker; then stop_docker; fi
  if wants postgres; then stop_postgres; fi
}

status() {
  local pid
  pid=$(pid_of "$DOCKER_DIR/dockerd.pid")
  if alive "$pid"; then echo "dockerd running (pid $pid)"; else echo "dockerd not running"; fi
  pid=$(pid_of "$SSH_DIR/sshd.pid")
  if alive "$pid"; then echo "sshd running (pid $pid)"; else echo "sshd not running"; fi
  pid=$(pg_pid)
  if alive "$pid"; then echo "postgres running (pid $pid)"; else echo "postgres not running"; fi
}

# the services named after the mode (all when none is named)
choose_services() {
  local s
  SERVICES=("$@")
  [ ${#SERVICES[@]} -gt 0 ] || SERVICES=("${ALL_SERVICES[@]}")
  for s in "${SERVICES[@]}"; do
    case " ${ALL_SERVICES[*]} " in
      *" $s "*) ;;
      *) echo "unknown service $s (one of: ${ALL_SERVICES[*]})" >&2; exit 2 ;;
    esac
  done
}

case "${1:-}" in
  start)
    choose_services "${@:2}"
    mkdir -p "$DIR"
    install_missing
    if wants docker; then start_dockerd; build_image; fi
    if wants ssh; then start_sshd; fi
    if wants postgres; then start_postgres; fi
    write_env
    ;;
  stop)
    choose_services "${@:2}"
    stop_all
    ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop [docker|ssh|postgres ...] | status" >&2
    exit 2
    ;;
esac
