import MediaFarmCLI

await MediaFarmMain.runAndExit()
