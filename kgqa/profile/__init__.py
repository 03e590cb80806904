"""The KB profile: what is specific to one knowledge graph, derived from the graph itself
(:mod:`kgqa.profile.model`, :mod:`kgqa.profile.derive`)."""
