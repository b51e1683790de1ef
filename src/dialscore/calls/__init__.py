"""Call outcomes clients report: the evidence the scoring engine learns from."""
