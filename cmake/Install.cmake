# install and package rules: see issue 2 (packaging)
