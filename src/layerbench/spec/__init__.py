"""The experiment: its models (validated, with errors that name the field and the allowed values), the
presets, the matrix of cells, and the rules that refuse an impossible cell before anything runs. The
engines' registry as the spec reads it is spec/engines/."""
