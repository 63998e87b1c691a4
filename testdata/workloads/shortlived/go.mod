module switchback.test/shortlived

go 1.19
