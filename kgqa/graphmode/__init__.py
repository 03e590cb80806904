"""Graph mode: the step vocabulary and grammar (from the KB profile), the graph walk, the
pipeline."""
