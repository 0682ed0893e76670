/// Text subtitle files for tests, as other people's tools write them.
public enum SubtitleFixtures {
    /// An ASS script (v4.00+, one Default style) whose events are `dialogues`, each the fields after
    /// "Dialogue: " (`0,0:00:00.50,0:00:01.50,Default,,0,0,0,,Text`).
    public static func ass(_ dialogues: [String]) -> String {
        """
        [Script Info]
        ScriptType: v4.00+

        [V4+ Styles]
        Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding
        Style: Default,Arial,20,&H00FFFFFF,&H000000FF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,1,0,2,10,10,10,1

        [Events]
        Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text

        """ + dialogues.map { "Dialogue: \($0)\n" }.joined()
    }
}
