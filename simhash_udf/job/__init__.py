"""The job: configuration, the pipeline of stages, the report (JSON, HTML, plots) and the command line."""
