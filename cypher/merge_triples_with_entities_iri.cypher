// $rows: [{s, si, r, o, oi, id, iri}]: merge_triples_with_entities.cypher for RDF. New
// entities get their IRI (si, oi; null for a literal), an entity without one (a literal's
// text) takes the row's, new relationships get the predicate's IRI. Only for a graph whose
// names cannot belong to other IRIs (empty when the load began); otherwise the load checks
// names first (merge_entities_iri). Idempotent: a reload sets nothing.
CYPHER replan=force
UNWIND $rows AS row
MERGE (s:Entity {name: row.s})
  ON CREATE SET s.iri = row.si
MERGE (o:Entity {name: row.o})
  ON CREATE SET o.iri = row.oi
WITH s, o, row
CALL (s, row) {
  WITH s, row
  WHERE s.iri IS NULL AND row.si IS NOT NULL
  SET s.iri = row.si
}
CALL (o, row) {
  WITH o, row
  WHERE o.iri IS NULL AND row.oi IS NOT NULL
  SET o.iri = row.oi
}
MERGE (s)-[r:$(row.r) {id: row.id}]->(o)
  ON CREATE SET r.iri = row.iri
