"""Knowledge graphs: the pack's KG store, entity linking, query-specific graphs."""
