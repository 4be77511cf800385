# Helpers for run.sh: fetching and building librdkafka's test suite.
# Sourced, not executed.

# The deb-src line points at the same mirror as the configured deb lines,
# which on these machines are in deb822 (.sources) form, elsewhere in
# one-line form.
conformance_mirror() {
    local uri=""
    if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
        uri="$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
            /etc/apt/sources.list.d/*.sources | head -n1)"
    fi
    if [ -z "$uri" ]; then
        uri="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' \
            | head -n1)"
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

conformance_as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

conformance_ensure_deb_src() {
    if apt-cache showsrc librdkafka >/dev/null 2>&1 \
        && [ -n "$(apt-cache showsrc librdkafka 2>/dev/null)" ]; then
        return 0
    fi
    local mirror list=/etc/apt/sources.list.d/cairn-deb-src.list
    mirror="$(conformance_mirror)"
    echo "adding deb-src $mirror bookworm main to $list"
    printf 'deb-src %s bookworm main\n' "$mirror" | conformance_as_root tee "$list" >/dev/null
    conformance_as_root apt-get update -qq
}

conformance_src_dir() {
    # apt-get source unpacks into librdkafka-<upstream version>/
    find "$1" -maxdepth 1 -type d -name 'librdkafka-*' | sort | tail -n1
}

conformance_prepare_source() {
    local work="$1"
    if [ -n "$(conformance_src_dir "$work")" ]; then
        return 0
    fi
    conformance_ensure_deb_src
    echo "fetching librdkafka source into $work"
    (cd "$work" && apt-get source -qq librdkafka)
}

# The current librdkafka comes from npm: node-rdkafka bundles its source,
# tests/ included, under package/deps/librdkafka/. Pinned, and the version
# in src/rdkafka.h checked, so a run names exactly what it tested.
CONFORMANCE_NPM_PACKAGE=node-rdkafka@3.6.1
CONFORMANCE_NPM_LIBRDKAFKA=2.12.0

# Prints "major.minor.revision" from RD_KAFKA_VERSION in src/rdkafka.h.
conformance_header_version() {
    local hex
    hex="$(awk '$1 == "#define" && $2 == "RD_KAFKA_VERSION" { print $3; exit }' "$1/src/rdkafka.h")"
    [ -n "$hex" ] || return 1
    echo "$(( (hex >> 24) & 255 )).$(( (hex >> 16) & 255 )).$(( (hex >> 8) & 255 ))"
}

conformance_prepare_npm_source() {
    local work="$1" dest="$1/librdkafka-$CONFORMANCE_NPM_LIBRDKAFKA" got tarball
    if [ ! -d "$dest" ]; then
        command -v npm >/dev/null || { echo "npm is needed for --suite npm" >&2; return 1; }
        echo "fetching $CONFORMANCE_NPM_PACKAGE (librdkafka $CONFORMANCE_NPM_LIBRDKAFKA) into $work"
        rm -rf "$work/npm"
        mkdir -p "$work/npm"
        tarball="$(cd "$work/npm" && npm pack --silent "$CONFORMANCE_NPM_PACKAGE" | tail -n1)"
        tar -xzf "$work/npm/$tarball" -C "$work/npm" package/deps/librdkafka
        mv "$work/npm/package/deps/librdkafka" "$dest"
        rm -rf "$work/npm"
    fi
    got="$(conformance_header_version "$dest")"
    if [ "$got" != "$CONFORMANCE_NPM_LIBRDKAFKA" ]; then
        echo "$dest/src/rdkafka.h says librdkafka $got, expected $CONFORMANCE_NPM_LIBRDKAFKA" >&2
        return 1
    fi
}

# Builds the npm source against Debian's -dev packages. mklove would fetch
# missing libraries only with --install-deps/--source-deps-only (not given);
# --no-download keeps it from fetching its own modules, and libcurl (OIDC
# only, no -dev package installed) is left out.
conformance_build_npm_suite() {
    local work="$1" src="$1/librdkafka-$CONFORMANCE_NPM_LIBRDKAFKA"
    if [ -x "$src/tests/test-runner" ]; then
        return 0
    fi
    echo "building librdkafka $CONFORMANCE_NPM_LIBRDKAFKA and its tests in $src (several minutes)"
    (
        cd "$src"
        [ -f Makefile.config ] || ./configure --no-download --disable-curl --disable-valgrind \
            --enable-zlib --enable-zstd --enable-ssl --enable-gssapi --enable-lz4-ext \
            >"$work/configure.log" 2>&1 \
            || { tail -n 30 "$work/configure.log"; exit 1; }
        make -j2 libs >"$work/build-libs.log" 2>&1 || { tail -n 30 "$work/build-libs.log"; exit 1; }
        make -j2 -C tests build >"$work/build-tests.log" 2>&1 || { tail -n 30 "$work/build-tests.log"; exit 1; }
    )
}

conformance_build_suite() {
    local work="$1" src
    src="$(conformance_src_dir "$work")"
    if [ -x "$src/tests/test-runner" ]; then
        return 0
    fi
    if [ ! -f "$work/.build-deps-installed" ]; then
        echo "installing build dependencies of librdkafka"
        conformance_ensure_deb_src
        DEBIAN_FRONTEND=noninteractive conformance_as_root apt-get build-dep -y -qq librdkafka
        # The suite's Makefile also wants these, which build-dep leaves out.
        DEBIAN_FRONTEND=noninteractive conformance_as_root apt-get install -y -qq \
            python3 g++ make pkg-config
        touch "$work/.build-deps-installed"
    fi
    echo "building librdkafka and its tests in $src (several minutes)"
    (
        cd "$src"
        [ -f Makefile.config ] || ./configure --disable-valgrind >"$work/configure.log" 2>&1 \
            || { tail -n 30 "$work/configure.log"; exit 1; }
        make -j2 libs >"$work/build-libs.log" 2>&1 || { tail -n 30 "$work/build-libs.log"; exit 1; }
        make -j2 -C tests build >"$work/build-tests.log" 2>&1 || { tail -n 30 "$work/build-tests.log"; exit 1; }
    )
}

conformance_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits until host:port accepts TCP connections while process $3 lives.
conformance_wait_port() {
    local host="$1" port="$2" pid="$3" i
    for i in $(seq 1 300); do
        if ! kill -0 "$pid" 2>/dev/null; then
            return 1
        fi
        if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# cairn-bench, building it in the work dir when no build of it is found.
conformance_find_bench() {
    local repo="$1" work="$2" candidate
    for candidate in "${CAIRN_BENCH:-}" "$repo/build/tools/bench/cairn-bench" \
        "$work/build/tools/bench/cairn-bench"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then
            echo "$candidate"
            return 0
        fi
    done
    cmake -S "$repo" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/build-bench.log" 2>&1 \
        && cmake --build "$work/build" --target cairn-bench -j2 >>"$work/build-bench.log" 2>&1 \
        || { tail -n 20 "$work/build-bench.log" >&2; return 1; }
    echo "$work/build/tools/bench/cairn-bench"
}

# Broker pid and data dir of the target we started, for the exit trap.
conformance_target_pid=""
conformance_target_dir=""

conformance_cluster_dir=""

conformance_stop_target() {
    if [ -n "$conformance_cluster_dir" ]; then
        "$conformance_repo/tools/cairn-cluster" down --dir "$conformance_cluster_dir" --wipe >/dev/null 2>&1 || true
        conformance_cluster_dir=""
    fi
    if [ -n "$conformance_target_pid" ] && kill -0 "$conformance_target_pid" 2>/dev/null; then
        kill -TERM "$conformance_target_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$conformance_target_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$conformance_target_pid" 2>/dev/null || true
    fi
    conformance_target_pid=""
    if [ -n "$conformance_target_dir" ]; then
        rm -rf "$conformance_target_dir"
        conformance_target_dir=""
    fi
}

# Starts librdkafka's mock cluster in its own process; sets bootstrap.
conformance_start_mock() {
    local bench="$1" work="$2" brokers="$3"
    local out="$work/mock.out"
    "$bench" mock-cluster --brokers "$brokers" >"$out" 2>"$work/target.log" &
    conformance_target_pid=$!
    for _ in $(seq 1 100); do
        [ -s "$out" ] && break
        sleep 0.1
    done
    bootstrap="$(head -n1 "$out")"
    [ -n "$bootstrap" ] || { echo "mock cluster did not start, see $work/target.log" >&2; return 1; }
}

# Settings the suite relies on: topics appear on first use, groups and
# transactions work on a single node. The 2.0.2 runs use rebalances that do
# not wait; librdkafka 2.12's group tests (0102, 0113) assume Kafka's default
# initial rebalance delay (3 s): consumers that subscribe together join one
# generation.
conformance_initial_rebalance_delay_ms=0

conformance_cairnd_settings() {
    echo "group.initial.rebalance.delay.ms=$conformance_initial_rebalance_delay_ms"
    cat <<'EOF_SETTINGS'
auto.create.topics.enable=true
num.partitions=4
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
delete.topic.enable=true
message.max.bytes=10485760
EOF_SETTINGS
}

# --security sasl_ssl: the suite's clients speak SASL_SSL with SCRAM-SHA-256
# as this user, trusting a test CA made at run time. The password is drawn
# per run; it only lives as long as the broker's temporary data dir.
conformance_security=plaintext
conformance_sasl_user=conformance
conformance_sasl_password=""
conformance_certs_dir=""

# A test CA (ca.pem) and a broker keystore for localhost and 127.0.0.1
# signed by it (server.pem: certificate then key), in directory $1, made
# with the openssl command line.
conformance_make_certs() {
    local dir="$1"
    (
        cd "$dir"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 7 \
            -subj "/CN=Cairn conformance CA"
        openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost"
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.crt \
            -days 7 -extfile server.ext
        cat server.crt server.key >server.pem
    ) >"$dir/openssl.log" 2>&1 || { cat "$dir/openssl.log" >&2; return 1; }
}

# The client properties of test.conf for a bootstrap list, by security.
conformance_client_conf() {
    local bootstrap="$1"
    printf 'metadata.broker.list=%s\n' "$bootstrap"
    case "$conformance_security" in
        sasl_ssl)
            printf '%s\n' security.protocol=SASL_SSL sasl.mechanisms=SCRAM-SHA-256 \
                "sasl.username=$conformance_sasl_user" "sasl.password=$conformance_sasl_password" \
                "ssl.ca.location=$conformance_certs_dir/ca.pem"
            ;;
    esac
}

# The cairn command line next to a cairnd build (build/core/server/cairnd ->
# build/cli/cairn), or $CAIRN.
conformance_find_cli() {
    local cairnd="$1" candidate
    for candidate in "${CAIRN:-}" "$(dirname "$cairnd")/../../cli/cairn"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then
            echo "$candidate"
            return 0
        fi
    done
    echo "cairn (the command line) not found next to $cairnd; set CAIRN" >&2
    return 1
}

# Starts cairnd on a free port with a temporary data dir; sets bootstrap.
# With --security sasl_ssl the suite's port is a SASL_SSL listener
# (SCRAM-SHA-256, the broker certificate of conformance_make_certs) and a
# second, PLAINTEXT, listener serves `cairn user create`.
conformance_start_cairnd() {
    local cairnd="$1" work="$2" port admin_port="" listeners
    port="$(conformance_free_port)"
    conformance_target_dir="$(mktemp -d /tmp/cairn-conformance.XXXXXX)"
    listeners="PLAINTEXT://127.0.0.1:$port"
    local overrides=()
    if [ "$conformance_security" = sasl_ssl ]; then
        admin_port="$(conformance_free_port)"
        conformance_certs_dir="$conformance_target_dir/certs"
        mkdir -p "$conformance_certs_dir"
        conformance_make_certs "$conformance_certs_dir"
        conformance_sasl_password="$(openssl rand -hex 16)"
        listeners="PLAINTEXT://127.0.0.1:$admin_port,SASL_SSL://127.0.0.1:$port"
        overrides+=(--override sasl.enabled.mechanisms=SCRAM-SHA-256
            --override "ssl.keystore.location=$conformance_certs_dir/server.pem")
    fi
    overrides+=(--override "listeners=$listeners"
        --override "advertised.listeners=$listeners"
        --override "log.dirs=$conformance_target_dir/data")
    local kv
    while IFS= read -r kv; do
        overrides+=(--override "$kv")
    done < <(conformance_cairnd_settings)
    echo "starting $cairnd on 127.0.0.1:$port (data in $conformance_target_dir)"
    "$cairnd" "${overrides[@]}" >"$work/target.log" 2>&1 &
    conformance_target_pid=$!
    if ! conformance_wait_port 127.0.0.1 "$port" "$conformance_target_pid"; then
        echo "cairnd did not start listening; last lines of $work/target.log:" >&2
        tail -n 20 "$work/target.log" >&2
        return 1
    fi
    bootstrap="127.0.0.1:$port"
    if [ -n "$admin_port" ]; then
        conformance_wait_port 127.0.0.1 "$admin_port" "$conformance_target_pid" || return 1
        local cli
        cli="$(conformance_find_cli "$cairnd")" || return 1
        # The password on stdin, not in the process list.
        printf '%s\n' "$conformance_sasl_password" \
            | "$cli" user create "$conformance_sasl_user" --mechanism SCRAM-SHA-256 \
                -b "127.0.0.1:$admin_port" >"$work/user-create.log" 2>&1 || {
            echo "cairn user create failed:" >&2
            cat "$work/user-create.log" >&2
            return 1
        }
    fi
}

# Starts a local cluster of `nodes` combined broker,controller cairnd
# processes with tools/cairn-cluster, with the suite's settings,
# replication factor 3 where the node count allows (the tests that need
# several brokers create RF 3 topics), a rack per node and the rack-aware
# replica selector (0101 fetches from a follower in its rack); sets
# bootstrap to every broker.
conformance_start_cluster() {
    local cairnd="$1" work="$2" nodes="$3" port rf kv
    port="$(conformance_free_port)"
    rf=$((nodes < 3 ? nodes : 3))
    conformance_cluster_dir="$(mktemp -d /tmp/cairn-conformance-cluster.XXXXXX)"
    local args=(up --dir "$conformance_cluster_dir" --combined "$nodes" --base-port "$port" --racks
        --prop replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector)
    while IFS= read -r kv; do
        case "$kv" in
            default.replication.factor=*) kv="default.replication.factor=$rf" ;;
            offsets.topic.replication.factor=*) kv="offsets.topic.replication.factor=$rf" ;;
            transaction.state.log.replication.factor=*) kv="transaction.state.log.replication.factor=$rf" ;;
        esac
        args+=(--prop "$kv")
    done < <(conformance_cairnd_settings)
    echo "starting $nodes cairnd nodes (broker,controller) from port $((port + 1)) in $conformance_cluster_dir"
    CAIRND="$cairnd" "$conformance_repo/tools/cairn-cluster" "${args[@]}" >"$work/target.log" 2>&1 || {
        echo "the cluster did not start; see $work/target.log and $conformance_cluster_dir" >&2
        cat "$work/target.log" >&2
        return 1
    }
    bootstrap=""
    local i
    for i in $(seq 1 "$nodes"); do
        bootstrap="$bootstrap${bootstrap:+,}127.0.0.1:$((port + i))"
    done
}
