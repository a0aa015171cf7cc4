"""Traces out to other tools: OpenInference spans as JSONL or sent over OTLP/HTTP (issue 18)."""
