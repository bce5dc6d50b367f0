// A higher layer; including it from base/ is the violation.
