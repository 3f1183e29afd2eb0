"""What the lowest layer shares beside the records: files every layer above opens the same way."""
