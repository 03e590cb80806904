// $rows: [{s, r, o, id}]. The relationship type comes from the row as a dynamic type, so a
// relation name is a value, never spliced into the query text. Entities must already exist.
// replan=force: a plan made while the graph has (almost) no relationships scans all
// relationships for every row (quadratic; measured 50 s instead of 2 s for 16k rows), and
// Neo4j would keep that plan cached; planning once per batch costs a few milliseconds.
CYPHER replan=force
UNWIND $rows AS row
MATCH (s:Entity {name: row.s})
MATCH (o:Entity {name: row.o})
MERGE (s)-[:$(row.r) {id: row.id}]->(o)
