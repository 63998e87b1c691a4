# Oracle for the goroutine labels of a Go 1.24+ core (g.labels -> *label.Set, a slice of
# key/value strings), read through the binary's DWARF types by gdb, apart from switchback's
# reader (Delve 1.20 crashes on these labels: `goroutines -l` panics in (*G).Labels):
#   gdb -batch -nx BINARY CORE -x tools/coredump/gdb_labels.py
# prints, for every M running a goroutine (m.curg), "lwp N goroutine G labels [k=v, ...]"; for
# an M on g0 after dropg (m.curg 0), the goroutine amd64 mcall left in the g0 slot
# *(g0.sched.sp - 8): "lwp N g0-slot goroutine G labels [...]".
import gdb


def gostr(v):
    n = int(v["len"])
    return bytes(gdb.selected_inferior().read_memory(int(v["str"]), n)).decode(errors="replace") if n else ""


def labels(g):
    p = int(g["labels"])
    if not p:
        return []
    st = gdb.Value(p).cast(gdb.lookup_type("internal/runtime/pprof/label.Set").pointer()).dereference()
    lst = st["List"]
    return ["%s=%s" % (gostr((lst["array"] + i).dereference()["Key"]), gostr((lst["array"] + i).dereference()["Value"]))
            for i in range(int(lst["len"]))]


G = gdb.lookup_type("runtime.g").pointer()
M = gdb.lookup_type("runtime.m").pointer()
m = int(gdb.parse_and_eval("'runtime.allm'"))
while m:
    mv = gdb.Value(m).cast(M).dereference()
    curg = int(mv["curg"])
    how = "goroutine"
    if not curg:
        g0 = gdb.Value(int(mv["g0"])).cast(G).dereference()
        sp = int(g0["sched"]["sp"])
        try:
            curg = int.from_bytes(bytes(gdb.selected_inferior().read_memory(sp - 8, 8)), "little") if sp else 0
            if curg and int(gdb.Value(curg).cast(G).dereference()["m"]) != 0:
                curg = 0  # running elsewhere: not this M's
        except gdb.MemoryError:
            curg = 0
        how = "g0-slot goroutine"
    if curg:
        g = gdb.Value(curg).cast(G).dereference()
        print("lwp %d %s %d labels [%s]" % (int(mv["procid"]), how, int(g["goid"]), ", ".join(sorted(labels(g)))))
    m = int(mv["alllink"])
