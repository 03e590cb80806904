// $rows: [{name, iri}], iri null for a literal (RDF), into a graph that had no entities when
// the load began: no name can belong to another IRI (the reader disambiguates within the
// file), so merge_entities_iri's check is left out. Idempotent.
UNWIND $rows AS row
MERGE (e:Entity {name: row.name})
  ON CREATE SET e.iri = row.iri
