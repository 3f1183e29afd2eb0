"""`layerbench serve`: the results store browsed in a web browser and read as JSON, rendered by the report's code."""
