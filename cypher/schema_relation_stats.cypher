// Every relation type of the KB with its triple count and distinct subject and object counts
// (a KB profile is derived from these; one pass over the relationships).
MATCH (s:Entity)-[r]->(o:Entity)
RETURN type(r) AS relation, count(r) AS count, count(DISTINCT s) AS subjects,
       count(DISTINCT o) AS objects
ORDER BY relation
