import QueueCLI

QueueMain.handOverUnlessQueueCommand()
await QueueMain.runQueueCommand()
