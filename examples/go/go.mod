module qwenrt.example/twoturnchat

go 1.19
