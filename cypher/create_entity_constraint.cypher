// One node per entity name; created before any write so that MERGE on a name is an index seek.
CREATE CONSTRAINT entity_name IF NOT EXISTS FOR (e:Entity) REQUIRE e.name IS UNIQUE
