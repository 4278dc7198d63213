package main

func main() {
	undefinedFunctionOfABrokenTarget()
}
