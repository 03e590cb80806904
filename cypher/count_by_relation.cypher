MATCH (:Entity)-[r]->(:Entity)
RETURN type(r) AS relation, count(r) AS count
ORDER BY relation
