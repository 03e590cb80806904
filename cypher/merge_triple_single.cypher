// One triple per query: the row-at-a-time baseline of benchmarks/bench_load.py.
MERGE (s:Entity {name: $s})
MERGE (o:Entity {name: $o})
MERGE (s)-[:$($r) {id: $id}]->(o)
