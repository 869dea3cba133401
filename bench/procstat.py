"""What the benchmarks read of a process and the machine from /proc: CPU seconds (user+system),
peak RSS (VmHWM) and the load average. Shared by the bench scripts that import it."""
import os

CLK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def hwm_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])
