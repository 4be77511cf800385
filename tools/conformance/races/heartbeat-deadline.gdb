# 0102, "max poll violation" step: consumer2 stops polling; its session ends
# 6 s after its last heartbeat, and consumer1's heartbeats fall on the same
# 3 s grid, within milliseconds of that deadline.
# This script drops consumer2's heartbeat that is due just as its
# max.poll.interval.ms (9 s) runs out, as happens when the max-poll check
# fires first, so its session ends 12 s into the step, and delays consumer1's
# heartbeats by DELAY_MS (default 80) so they land after that deadline.
# consumer1 then revokes, rejoins alone and gets its assignment inside the
# test's 15 s window: "Expected rebalance event NO_ERROR got
# _ASSIGN_PARTITIONS". With DELAY_MS=0 the outcome is left to chance.
set confirm off
set pagination off
set non-stop on
set breakpoint pending on
python
import gdb, os, threading, time
delay = float(os.environ.get("DELAY_MS", "80")) / 1000.0
def resume_later(num, seconds, skip_call):
    def resume():
        gdb.execute("thread %d" % num, to_string=True)
        if skip_call:
            gdb.execute("return", to_string=True)
        gdb.execute("continue &", to_string=True)
    if seconds > 0:
        threading.Timer(seconds, lambda: gdb.post_event(resume)).start()
    else:
        gdb.post_event(resume)
def on_stop(ev):
    if not isinstance(ev, gdb.BreakpointEvent):
        return
    num = ev.inferior_thread.num
    inst = gdb.parse_and_eval("group_instance_id")
    name = inst["str"].string(length=int(inst["len"])) if int(inst) != 0 else ""
    last_poll_us = int(gdb.parse_and_eval("rkb->rkb_rk->rk_ts_last_poll.val"))
    idle_s = (time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6 - last_poll_us) / 1e6
    if name == "consumer2" and 8.5 < idle_s < 1e6:
        gdb.write("[heartbeat-deadline] dropping consumer2's heartbeat (idle %.3f s)\n" % idle_s)
        resume_later(num, 0, True)
    elif name == "consumer1":
        resume_later(num, delay, False)
    else:
        resume_later(num, 0, False)
gdb.events.stop.connect(on_stop)
end
break rd_kafka_HeartbeatRequest
run &
