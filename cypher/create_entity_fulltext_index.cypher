// Full-text index over entity names: suggestions for unknown entities and entity linking.
CREATE FULLTEXT INDEX entity_names IF NOT EXISTS FOR (n:Entity) ON EACH [n.name]
