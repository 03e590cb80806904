// $rows: [{s, r, o, id, iri}]: merge_triples.cypher for RDF, with the predicate's IRI kept
// on each new relationship. Entities must already exist. replan=force: see merge_triples.
CYPHER replan=force
UNWIND $rows AS row
MATCH (s:Entity {name: row.s})
MATCH (o:Entity {name: row.o})
MERGE (s)-[r:$(row.r) {id: row.id}]->(o)
  ON CREATE SET r.iri = row.iri
