# 0102, first step: both consumers subscribe at once and the test expects one
# assignment each. The conformance runner sets
# group.initial.rebalance.delay.ms=0, so the first generation forms with
# whichever members have joined by the next coordinator check. This script
# holds consumer1's first JoinGroup for DELAY_MS (default 200), as a busy
# machine can: consumer2 forms generation 1 alone, is assigned, and is then
# revoked when consumer1 joins: "line 204: ...consumer-4: Expected rebalance
# event NO_ERROR got _REVOKE_PARTITIONS".
set confirm off
set pagination off
set non-stop on
set breakpoint pending on
python
import gdb, os, threading
delay = float(os.environ.get("DELAY_MS", "200")) / 1000.0
held = set()
def resume_later(num, seconds):
    def resume():
        gdb.execute("thread %d" % num, to_string=True)
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
    if name == "consumer1" and "consumer1" not in held:
        held.add(name)
        gdb.write("[first-join] holding consumer1's first JoinGroup\n")
        resume_later(num, delay)
    else:
        resume_later(num, 0)
gdb.events.stop.connect(on_stop)
end
break rd_kafka_JoinGroupRequest
run &
