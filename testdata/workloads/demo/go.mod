module switchback/demo

go 1.19
