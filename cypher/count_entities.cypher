MATCH (e:Entity)
RETURN count(e) AS count
