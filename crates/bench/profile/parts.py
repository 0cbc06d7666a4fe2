"""Sum two callgrind profiles' instructions by part, difference them, and
print a loop's instructions per part (see decision-parts.sh).

A function's own instructions go to the part its name names (the crate);
those of the allocator, memcpy and generic std code go up its callers, in
the proportion each caller's calls cost, to the first caller that names a
part."""
import collections
import re
import sys

# First match wins.
PARTS = [
    ("sled", r"\bsled::"),
    ("HTTP: hyper, http, httparse", r"hyper|\bhttp::|httparse"),
    ("HTTP: axum, tower (routing, extractors, handler glue)", r"axum|tower|matchit"),
    ("JSON: serde_json", r"serde_json"),
    ("serde derive code", r"serde"),
    ("tokio", r"tokio|mio::"),
    ("tracing", r"tracing"),
    ("SHA-256 (software under valgrind; SHA-NI natively)", r"sha2|sha256|digest"),
    ("engine (plangate_engine)", r"plangate_engine"),
    ("gate", r"plangate_gate"),
    ("store: encode, records, redo (plangate_store)", r"plangate_store"),
    ("audit chain (plangate_audit)", r"plangate_audit"),
    ("channel, delivery", r"plangate_channel|plangate_delivery"),
    ("server: handlers, Core, jobs (plangate_server)", r"plangate_server"),
    ("web", r"plangate_web"),
    ("basics", r"plangate_basics"),
    ("crossbeam, parking_lot", r"crossbeam|parking_lot"),
    ("std (other)", r"\bstd::|\bcore::|\balloc::"),
]
# Charged to the caller.
PASS_UP = re.compile(
    r"malloc|free|realloc|calloc|_int_|unlink_chunk|__rdl_|__rust_(alloc|dealloc|realloc)|alloc::alloc|raw_vec|finish_grow"
    r"|do_reserve|grow_one|mem(cpy|move|set|cmp)|strlen|<alloc::vec::Vec<T,A> as core::clone::Clone>|spec_from_iter"
    r"|spec_extend|alloc::fmt::format|<alloc::string::String as core::clone|core::fmt::write|core::fmt::Formatter"
    r"|<alloc::string::String as core::fmt::Write>|hex::|core::hash|BTreeMap|hashbrown"
)
LINE = re.compile(r"\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.*)$")
CALLER = re.compile(r"\s*([\d,]+)\s+\([\s\d.]+%\)\s+([<*])\s+(.*?)(\s+\(\d[\d,]*x\))?\s*(\[.*\])?\s*$")


def part_of(name):
    for part, pattern in PARTS:
        if re.search(pattern, name):
            return part
    return "other (libc, unnamed code)"


def own_costs(path):
    costs = collections.Counter()
    for line in open(path):
        m = LINE.match(line)
        if m and "PROGRAM TOTALS" not in line:
            costs[m.group(2).strip()] += int(m.group(1).replace(",", ""))
    return costs


def callers_of(path):
    callers, pending = {}, []
    for line in open(path):
        m = CALLER.match(line)
        if not m:
            pending = []
            continue
        cost, kind = int(m.group(1).replace(",", "")), m.group(2)
        name = m.group(3).strip() + (" " + m.group(5) if m.group(5) else "")
        if kind == "<":
            pending.append((cost, name))
        else:
            callers[name], pending = pending, []
    return callers


def by_part(prefix):
    callers, parts = callers_of(prefix + ".callers.txt"), collections.Counter()

    def charge(name, cost, depth):
        if not PASS_UP.search(name):
            parts[part_of(name)] += cost
            return
        up = callers.get(name)
        if not up or depth > 8:
            parts["allocator, copies (caller not found)"] += cost
            return
        total = sum(c for c, _ in up) or 1
        for c, caller in up:
            charge(caller, cost * c / total, depth + 1)

    for name, cost in own_costs(prefix + ".self.txt").items():
        charge(name, cost, 0)
    return parts


short, long, loops = by_part(sys.argv[1]), by_part(sys.argv[2]), float(sys.argv[3])
per_loop = {k: (long[k] - short.get(k, 0)) / loops for k in long}
total = sum(per_loop.values())
print(f"| part | instructions per loop | share |\n|---|---|---|")
for part, n in sorted(per_loop.items(), key=lambda kv: -kv[1]):
    print(f"| {part} | {n / 1e3:,.0f} K | {100 * n / total:.1f} % |")
print(f"| **all** | **{total / 1e3:,.0f} K** | 100 % |")
