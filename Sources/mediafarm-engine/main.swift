import Foundation
import MediaFarmCLI

// Before any thread starts: SVT-AV1 (AV1 rungs) writes its whole configuration to stderr at every encoder's
// start unless its log level says otherwise (1: errors); a user's own setting stands.
setenv("SVT_LOG", "1", 0)

await MediaFarmMain.runAndExit()
