# usage: python3 ratios.py <prefix>...: for the round files <prefix>-<tree>-<round>.txt here (tree: before or after),
# the median and range of leasehold / ceiling (rate, p50) per tree and in-flight count, over every round.
import glob
import re
import statistics as st
import sys

res = {}
for prefix in sys.argv[1:]:
    for f in sorted(glob.glob(prefix + "-*.txt")):
        m = re.search(r"-(before|after)-\d+\.txt$", f)
        if m is None:
            continue
        runs = {}
        for line in open(f):
            r = re.match(r"repeat \d+ (?:\S+ )?in-flight (\d+) (\w+): ([\d.]+) (?:pairs|req)/s, p50 ([\d.]+) ms", line)
            if r:
                runs[(int(r[1]), r[2])] = (float(r[3]), float(r[4]))
        for c in sorted({k[0] for k in runs}):
            if (c, "leasehold") in runs and (c, "ceiling") in runs:
                l, ce = runs[(c, "leasehold")], runs[(c, "ceiling")]
                res.setdefault((m[1], c), []).append((round(l[0] / ce[0], 2), round(l[1] / ce[1], 2)))
for k in sorted(res):
    r = [x[0] for x in res[k]]
    p = [x[1] for x in res[k]]
    print(k, "rate", st.median(r), (min(r), max(r)), "p50", st.median(p), (min(p), max(p)), "n", len(r))
