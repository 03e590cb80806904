// Distinct triple ids; equals count_relationships unless an id is on two relationships.
MATCH (:Entity)-[r]->(:Entity)
WHERE r.id IS NOT NULL
RETURN count(DISTINCT r.id) AS count
