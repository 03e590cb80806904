"""The graph store: Neo4j access (neo4j_store), the local server (server), Cypher files (queries)."""
