# usage: python3 ratios.py <dir>...: per (tree, in flight), the median and range of leasehold / ceiling (rate, p50) over the round files <tree>-<round>.txt
import re,sys,glob,statistics as st
# usage: ratios.py dir... : per (tree, in flight) the list of leasehold/ceiling ratios (rate, p50) over every round file
res={}
for d in sys.argv[1:]:
    for f in sorted(glob.glob(d+'/*.txt')):
        tree=f.split('/')[-1].split('-')[0]
        runs={}
        for line in open(f):
            m=re.match(r'repeat \d+ (?:\S+ )?in-flight (\d+) (\w+): ([\d.]+) (?:pairs|req)/s, p50 ([\d.]+) ms', line)
            if m: runs[(int(m[1]),m[2])]=(float(m[3]),float(m[4]))
        for c in sorted({k[0] for k in runs}):
            if (c,'leasehold') in runs and (c,'ceiling') in runs:
                l,ce=runs[(c,'leasehold')],runs[(c,'ceiling')]
                res.setdefault((tree,c),[]).append((round(l[0]/ce[0],2),round(l[1]/ce[1],2)))
for k in sorted(res):
    v=res[k]; r=[x[0] for x in v]; p=[x[1] for x in v]
    print(k, 'rate ratio median',st.median(r),'range',min(r),max(r),'| p50 ratio median',st.median(p),'range',min(p),max(p),'n',len(v), r, p)
