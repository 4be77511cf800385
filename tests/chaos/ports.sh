# Sourced by the chaos tests: pick_base_port N sets base_port to a base
# whose ports base+1..base+N (brokers) and base+101..base+100+N
# (controllers) nothing uses now, so two runs on one machine (or another
# test with fixed ports) cannot collide. Bases are drawn below the kernel's
# ephemeral range and above the fixed ports other tests use (19092, 21011,
# 22000-23103; 29092 is skipped), so outgoing connections do not take them
# mid-run and a later fixed-port test does not meet a chaos node, and a
# lock file held on fd 9 until the test exits keeps two tests that pick at
# the same moment from sharing one.
port_in_use() { # port -> 0 when some socket (any state) or a listener holds it
    if command -v ss > /dev/null 2>&1; then
        [ -n "$(ss -Htan "( sport = :$1 )" 2> /dev/null)" ] && return 0
    fi
    (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null
}

pick_base_port() { # nodes
    local nodes="$1" low=26000 high=32000 lo base try p busy
    lo="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2> /dev/null || echo 32768)"
    [ "$lo" -gt $((low + 1000)) ] && [ "$lo" -lt "$high" ] && high="$lo"
    for try in $(seq 1 50); do
        base=$((low + (RANDOM % ((high - low - 200) / 200)) * 200))
        case "$base" in 29000 | 29200) continue ;; esac
        exec 9> "${TMPDIR:-/tmp}/cairn-chaos-port-$base.lock"
        flock -n 9 || continue
        busy=0
        for p in $(seq $((base + 1)) $((base + nodes))) $(seq $((base + 101)) $((base + 100 + nodes))); do
            port_in_use "$p" && { busy=1; break; }
        done
        [ "$busy" = 0 ] && { base_port="$base"; return 0; }
    done
    fail "no free base port after 50 tries"
}
