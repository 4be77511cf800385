# 0061: pause the application thread between taking a message off the
# consumer queue and storing its offset (rd_kafka_consume0 calls
# rd_kafka_fetch_op_app_prepare in between). Statistics emitted meanwhile
# carry the previous stored offset and reach the test's callback after it has
# counted the new message: "Stats consumer_lag N+1, expected N".
# PAUSE_MS (default 250) should exceed statistics.interval.ms (100).
set confirm off
set pagination off
set non-stop on
set breakpoint pending on
python
import gdb, os, threading
pause = float(os.environ.get("PAUSE_MS", "250")) / 1000.0
def resume_later(num):
    def resume():
        gdb.execute("thread %d" % num, to_string=True)
        gdb.execute("continue &", to_string=True)
    # Resume from a timer so gdb keeps serving the other threads meanwhile.
    threading.Timer(pause, lambda: gdb.post_event(resume)).start()
def on_stop(ev):
    if isinstance(ev, gdb.BreakpointEvent):
        resume_later(ev.inferior_thread.num)
gdb.events.stop.connect(on_stop)
end
break rd_kafka_fetch_op_app_prepare
run &
