// $rows: [{name, iri}], iri null for a literal (RDF). Idempotent: a reload sets nothing.
// A node without an iri (a literal's text, or a name from a non-RDF file) takes the row's
// IRI. Returns the rows whose name already belongs to a different IRI: the caller rolls
// the batch back, so that two IRIs never silently become one entity.
UNWIND $rows AS row
MERGE (e:Entity {name: row.name})
  ON CREATE SET e.iri = row.iri
WITH e, row
CALL (e, row) {
  WITH e, row
  WHERE e.iri IS NULL AND row.iri IS NOT NULL
  SET e.iri = row.iri
}
WITH e, row
WHERE row.iri IS NOT NULL AND e.iri <> row.iri
RETURN row.name AS name, row.iri AS iri, e.iri AS existing
