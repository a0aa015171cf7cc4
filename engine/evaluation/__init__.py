"""Evaluation: metrics, the dataset runner, and importers that turn public QA datasets into packs."""
