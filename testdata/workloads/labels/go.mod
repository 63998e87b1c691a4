module switchback/labels

go 1.19
