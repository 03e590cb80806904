"""The paper's Figure 2, one module per stage: decompose -> retrieve -> answer -> synthesize."""
