#!/usr/bin/env python3
"""PostgreSQL transactions per loop from the statement log (docs/PERFORMANCE.md §9).

Usage: pg-log-xacts.py FIRST_LOG_LINE LOOPS [RUN]: the log of /var/log/postgresql/postgresql-15-main.log
from line FIRST_LOG_LINE, with log_statement = all on the bench database while
`replicas --count-xacts LOOPS` ran; RUN 0 is the first build it measured (the baseline), 1 the next.
Counts every COMMIT and every statement outside a transaction block between the two
xact_commit reads of that run, and prints them by statement."""
import re,sys
lines=open('/var/log/postgresql/postgresql-15-main.log',errors='replace').read().splitlines()[int(sys.argv[1]):]
loops=int(sys.argv[2])
# window between the two xact_commit reads
idx=[i for i,l in enumerate(lines) if 'xact_commit FROM pg_stat_database' in l]
r=int(sys.argv[3]) if len(sys.argv)>3 else 0
w=lines[idx[2*r]+1:idx[2*r+1]]
intx={};n=0;kinds={}
for l in w:
    m=re.search(r'\[(\d+)\] \S+ LOG:  (statement|execute[^:]*): (.*)',l)
    if not m: continue
    pid,kind,sql=m.groups()
    s=sql.strip().upper()
    if s.startswith('START TRANSACTION') or s=='BEGIN':
        intx[pid]=True; continue
    if s in('COMMIT','ROLLBACK'):
        intx[pid]=False; n+=1; kinds['(transaction block)']=kinds.get('(transaction block)',0)+1; continue
    if 'XACT_COMMIT' in s or 'COUNT(*) FROM' in s: continue
    if not intx.get(pid):
        n+=1; k=re.sub(r'\s+',' ',sql)[:90]; kinds[k]=kinds.get(k,0)+1
print(f"transactions per loop: {n/loops:.2f}")
for k,v in sorted(kinds.items(),key=lambda x:-x[1]): print(f"  {v/loops:5.2f}  {k}")
